//! Every report the People commands print, as text and as JSON bytes, built by one
//! function each. The JSON shapes are the `Serialize` structs below and nowhere else.
//! Reports of findings carry only static messages, paths, positions and schema pointers;
//! reviews and listings show values from files only after control characters are
//! replaced. Nothing here decides what is valid.

use serde::Serialize;

use super::hire::Review;
use super::model::Person;
use super::resolve::{Rejection, Resolved, Rule};
use super::workspace::Validation;
use super::{BINDINGS_SPEC, HIRE_SPEC, PERSON_SPEC, displayable, printable};
use crate::Diagnostic;

// ---------------------------------------------------------------------------------------
// Findings

/// Findings as text, one block each: `error[code]: message`, then where, the rule, the
/// contract field and a hint when there are any.
pub fn findings_text(findings: &[Diagnostic]) -> String {
    let mut text = String::new();
    for finding in findings {
        let severity = if finding.is_error() { "error" } else { "warning" };
        text.push_str(&format!("{severity}[{}]: {}\n", finding.code, finding.message));
        let file = finding.file.as_deref().unwrap_or_default();
        match finding.position {
            Some(position) => text.push_str(&format!("  --> {file}:{}:{}\n", position.line, position.column)),
            None => text.push_str(&format!("  --> {file}\n")),
        }
        if let Some(rule) = &finding.pointer {
            text.push_str(&format!("  rule: {}\n", printable(rule)));
        }
        if let Some(field) = &finding.field {
            text.push_str(&format!("  field: `{}`\n", printable(field)));
        }
        for hint in &finding.hints {
            text.push_str(&format!("  hint: {hint}\n"));
        }
    }
    text
}

/// `N error(s), M warning(s)`.
pub fn count_summary(findings: &[Diagnostic]) -> String {
    let errors = findings.iter().filter(|finding| finding.is_error()).count();
    let warnings = findings.len() - errors;
    format!("{}, {}", plural(errors, "error", "errors"), plural(warnings, "warning", "warnings"))
}

fn plural(count: usize, one: &str, many: &str) -> String {
    if count == 1 { format!("1 {one}") } else { format!("{count} {many}") }
}

#[derive(Serialize)]
struct FindingJson<'a> {
    severity: &'static str,
    code: &'static str,
    file: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    column: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<&'a str>,
}

fn findings_json(findings: &[Diagnostic]) -> Vec<FindingJson<'_>> {
    findings
        .iter()
        .map(|finding| FindingJson {
            severity: if finding.is_error() { "error" } else { "warning" },
            code: finding.code,
            file: finding.file.as_deref().unwrap_or_default(),
            line: finding.position.map(|position| position.line),
            column: finding.position.map(|position| position.column),
            rule: finding.pointer.as_deref(),
            field: finding.field.as_deref(),
            message: &finding.message,
            hint: finding.hints.first().map(String::as_str),
        })
        .collect()
}

/// Findings alone as a JSON document (for commands that stop on them).
pub fn findings_document(findings: &[Diagnostic]) -> Vec<u8> {
    #[derive(Serialize)]
    struct Document<'a> {
        format: &'static str,
        errors: usize,
        warnings: usize,
        findings: Vec<FindingJson<'a>>,
    }
    let errors = findings.iter().filter(|finding| finding.is_error()).count();
    super::document::json_bytes(&Document {
        format: "acompose.people-findings.v1",
        errors,
        warnings: findings.len() - errors,
        findings: findings_json(findings),
    })
}

// ---------------------------------------------------------------------------------------
// Validation

/// The line `people validate` prints on success.
pub fn validation_text(validation: &Validation) -> String {
    let roster = &validation.roster;
    let bindings = if roster.has_bindings {
        format!(", bindings for {}", plural(roster.bindings.roles.len(), "role", "roles"))
    } else {
        String::new()
    };
    format!(
        "people workspace is valid: {} ({} active, {} archived), {}{bindings}\nconfiguration only: no runtime activity is inferred from these declarations\n",
        plural(roster.people.len(), "configured person", "configured people"),
        roster.active(),
        roster.archived(),
        plural(roster.templates, "template", "templates"),
    )
}

pub fn validation_json(validation: &Validation) -> Vec<u8> {
    #[derive(Serialize)]
    struct Document<'a> {
        format: &'static str,
        valid: bool,
        contract_verified: bool,
        configured_people: usize,
        active: usize,
        archived: usize,
        templates: usize,
        bound_roles: usize,
        runtime_activity: &'static str,
        errors: usize,
        warnings: usize,
        findings: Vec<FindingJson<'a>>,
    }
    let roster = &validation.roster;
    let errors = validation.findings.iter().filter(|finding| finding.is_error()).count();
    super::document::json_bytes(&Document {
        format: "acompose.people-validation.v1",
        valid: errors == 0,
        contract_verified: !validation.stopped_at_contract,
        configured_people: roster.people.len(),
        active: roster.active(),
        archived: roster.archived(),
        templates: roster.templates,
        bound_roles: roster.bindings.roles.len(),
        runtime_activity: "none inferred",
        errors,
        warnings: validation.findings.len() - errors,
        findings: findings_json(&validation.findings),
    })
}

// ---------------------------------------------------------------------------------------
// Listing and showing

fn status(person: &Person) -> &'static str {
    if person.archived { "archived" } else { "active" }
}

/// The roster as a table: id, role, status, name (names last, shown sanitized).
pub fn list_text(people: &[Person]) -> String {
    let id_width = people.iter().map(|person| person.id.len()).max().unwrap_or(0).max("ID".len());
    let role_width = people.iter().map(|person| person.role.len()).max().unwrap_or(0).max("ROLE".len());
    let mut text = format!("{:<id_width$}  {:<role_width$}  {:<8}  NAME\n", "ID", "ROLE", "STATUS");
    for person in people {
        text.push_str(&format!(
            "{:<id_width$}  {:<role_width$}  {:<8}  {}\n",
            person.id,
            person.role,
            status(person),
            one_line(&person.name)
        ));
    }
    let active = people.iter().filter(|person| person.is_active()).count();
    text.push_str(&format!(
        "{} ({active} active, {} archived); configuration only, no runtime activity is inferred\n",
        plural(people.len(), "configured person", "configured people"),
        people.len() - active
    ));
    text
}

/// The roster as JSON, with the findings of files that could not be listed.
pub fn list_json(people: &[Person], findings: &[Diagnostic], roster_roles: Option<&[String]>) -> Vec<u8> {
    #[derive(Serialize)]
    struct Document<'a> {
        format: &'static str,
        configured_people: usize,
        people: Vec<Entry<'a>>,
        findings: Vec<FindingJson<'a>>,
    }
    #[derive(Serialize)]
    struct Entry<'a> {
        id: &'a str,
        name: &'a str,
        role: &'a str,
        /// The roster role the Person is bound to, `null` when none (or no roster).
        roster_role: Option<&'a str>,
        archived: bool,
    }
    let bound = |role: &str| roster_roles.is_some_and(|roles| roles.iter().any(|slug| slug == role));
    super::document::json_bytes(&Document {
        format: "acompose.people-list.v1",
        configured_people: people.len(),
        people: people
            .iter()
            .map(|person| Entry {
                id: &person.id,
                name: &person.name,
                role: &person.role,
                roster_role: bound(&person.role).then_some(person.role.as_str()),
                archived: person.archived,
            })
            .collect(),
        findings: findings_json(findings),
    })
}

/// The line `people show` adds: which roster role the Person works as.
pub fn roster_role_line(bound: &super::roster_role::Bound) -> String {
    use super::roster_role::Bound;
    let value = match bound {
        Bound::Role(role) => format!("`{role}`: sessions start as this role, with only its bundle in sight"),
        Bound::Unbound { suggestion: Some(role) } => {
            format!("none: the role is no roster role (did you mean `{role}`?); sessions see the host's context")
        }
        Bound::Unbound { suggestion: None } => {
            "none: the role is no roster role; sessions see the host's context".to_owned()
        }
        Bound::NoRoster => "unknown: no roster was read".to_owned(),
    };
    format!("  {:<20} {value}\n", "roster role:")
}

/// A value from a file on one line: control characters (newlines included) replaced.
fn one_line(text: &str) -> String {
    displayable(text)
}

/// A multi-line value: each line sanitized, continuation lines indented.
fn indented(text: &str, indent: &str) -> String {
    text.split('\n').map(displayable).collect::<Vec<_>>().join(&format!("\n{indent}"))
}

/// One Person as a card of the fields it sets.
pub fn person_text(person: &Person) -> String {
    const INDENT: &str = "                       ";
    let mut text = format!("{} — {} ({})\n", person.id, one_line(&person.name), status(person));
    let mut line = |label: &str, value: String| text.push_str(&format!("  {label:<20} {value}\n"));
    line("role:", person.role.clone());
    line("goal:", indented(&person.goal, INDENT));
    let optional = [
        ("definition_id:", &person.definition_id),
        ("preferred_provider:", &person.preferred_provider),
        ("preferred_model:", &person.preferred_model),
    ];
    for (label, value) in optional {
        if let Some(value) = value {
            line(label, one_line(value));
        }
    }
    for (label, values) in
        [("capabilities:", &person.capabilities), ("skills:", &person.skills), ("mcp_servers:", &person.mcp_servers)]
    {
        if !values.is_empty() {
            line(label, one_line(&values.join(", ")));
        }
    }
    if let Some(avatar) = &person.avatar {
        line("avatar:", format!("{} {}", one_line(&avatar.character), one_line(&avatar.accent)));
    }
    if let Some(isolation) = person.isolation {
        line("isolation:", isolation.as_str().to_owned());
    }
    let budget = &person.budget;
    let mut limits = Vec::new();
    if let Some(value) = budget.max_tokens {
        limits.push(format!("max_tokens {value}"));
    }
    if let Some(value) = budget.max_cost_usd {
        limits.push(format!("max_cost_usd {value}"));
    }
    if let Some(value) = budget.max_seconds {
        limits.push(format!("max_seconds {value}"));
    }
    let budget_text = if limits.is_empty() {
        "inherited (no limit declared here; never unlimited)".to_owned()
    } else {
        format!("{}; omitted limits are inherited", limits.join(", "))
    };
    line("budget:", budget_text);
    if let Some(source) = &person.import_source {
        let mut provenance = vec![HIRE_SPEC.to_owned()];
        if let Some(id) = &source.id {
            provenance.push(format!("id {}", one_line(id)));
        }
        if let Some(character) = &source.original_character {
            provenance.push(format!("original character {}", one_line(character)));
        }
        if let Some(accent) = &source.original_accent {
            provenance.push(format!("original accent {}", one_line(accent)));
        }
        line(
            "import_source:",
            format!("{}; inert provenance: reviewed, never spawned, installed or synced", provenance.join(", ")),
        );
    }
    text
}

// ---------------------------------------------------------------------------------------
// Import review

/// The review `people import` prints: mapped fields, ignored field names, what review
/// must still supply, and whether `--save` can write.
pub fn review_text(file: &str, review: &Review, saved_to: Option<&str>) -> String {
    let mut text = format!("review of `{}` ({HIRE_SPEC}), a one-way import\n\nmapped fields\n", printable(file));
    let source_width = review.mapped.iter().map(|mapped| mapped.source.len()).max().unwrap_or(0).max("(fixed)".len());
    let target_width =
        review.mapped.iter().map(|mapped| mapped.target.len()).max().unwrap_or(0).max("import_source".len());
    for mapped in &review.mapped {
        let note = mapped.note.map(|note| format!("  ({note})")).unwrap_or_default();
        text.push_str(&format!(
            "  {:<source_width$} -> {:<target_width$}  {}{note}\n",
            mapped.source,
            mapped.target,
            one_line(&mapped.value)
        ));
    }
    text.push_str(&format!(
        "  {:<source_width$} -> {:<target_width$}  review_required: true, auto_spawn: false, auto_install: false, live_sync: false\n",
        "(fixed)", "import_source"
    ));
    text.push_str("\nignored fields\n");
    if review.ignored.is_empty() {
        text.push_str("  (none)\n");
    }
    let name_width = review.ignored.iter().map(|ignored| printable(&ignored.name).len()).max().unwrap_or(0);
    for ignored in &review.ignored {
        text.push_str(&format!("  {:<name_width$}  {}\n", printable(&ignored.name), ignored.reason));
    }
    if !review.attention.is_empty() {
        text.push_str("\nneeds review\n");
        for item in &review.attention {
            let blocking = if item.blocking { "  [blocks --save]" } else { "" };
            text.push_str(&format!("  {}: {}{blocking}\n", item.field, item.message));
        }
    }
    text.push('\n');
    match (saved_to, &review.person) {
        (Some(path), _) => text.push_str(&format!("saved `{path}`; nothing was started, installed or synced\n")),
        (None, Some(person)) => {
            text.push_str(&format!("nothing was written; run again with --save to write `people/{}.json`\n", person.id))
        }
        (None, None) => text.push_str("nothing was written; resolve the items that block --save first\n"),
    }
    text
}

pub fn review_json(file: &str, review: &Review, saved_to: Option<&str>) -> Vec<u8> {
    #[derive(Serialize)]
    struct Document<'a> {
        format: &'static str,
        file: String,
        source_spec: &'static str,
        mapped: Vec<MappedJson<'a>>,
        ignored: Vec<IgnoredJson>,
        needs_review: Vec<AttentionJson>,
        import_source: FixedFlags,
        ready_to_save: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        person_id: Option<&'a str>,
        written: Option<&'a str>,
    }
    #[derive(Serialize)]
    struct MappedJson<'a> {
        source: &'static str,
        target: &'static str,
        value: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<&'static str>,
    }
    #[derive(Serialize)]
    struct IgnoredJson {
        name: String,
        reason: &'static str,
    }
    #[derive(Serialize)]
    struct AttentionJson {
        field: &'static str,
        message: &'static str,
        blocking: bool,
    }
    #[derive(Serialize)]
    struct FixedFlags {
        review_required: bool,
        auto_spawn: bool,
        auto_install: bool,
        live_sync: bool,
    }
    super::document::json_bytes(&Document {
        format: "acompose.people-import-review.v1",
        file: printable(file),
        source_spec: HIRE_SPEC,
        mapped: review
            .mapped
            .iter()
            .map(|mapped| MappedJson {
                source: mapped.source,
                target: mapped.target,
                value: &mapped.value,
                note: mapped.note,
            })
            .collect(),
        ignored: review
            .ignored
            .iter()
            .map(|ignored| IgnoredJson { name: printable(&ignored.name), reason: ignored.reason })
            .collect(),
        needs_review: review
            .attention
            .iter()
            .map(|item| AttentionJson { field: item.field, message: item.message, blocking: item.blocking })
            .collect(),
        import_source: FixedFlags { review_required: true, auto_spawn: false, auto_install: false, live_sync: false },
        ready_to_save: review.is_ready(),
        person_id: review.person.as_ref().map(|person| person.id.as_str()),
        written: saved_to,
    })
}

// ---------------------------------------------------------------------------------------
// Resolution

/// The per-role preview of `people resolve`. Every value printed is a slug.
pub fn resolution_text(recipe_file: &str, resolved: &[Resolved]) -> String {
    let role_width = resolved.iter().map(|role| role.role.len()).max().unwrap_or(0).max("ROLE".len());
    let person_width = resolved
        .iter()
        .map(|role| role.person_id.as_deref().unwrap_or("-").len())
        .max()
        .unwrap_or(0)
        .max("PERSON".len());
    let mut text = format!("resolution preview for `{}`; nothing is started\n", printable(recipe_file));
    text.push_str(&format!("{:<role_width$}  {:<person_width$}  RULE\n", "ROLE", "PERSON"));
    for role in resolved {
        text.push_str(&format!(
            "{:<role_width$}  {:<person_width$}  {}\n",
            role.role,
            role.person_id.as_deref().unwrap_or("-"),
            role.rule.label()
        ));
        for skip in &role.skipped {
            text.push_str(&format!(
                "{:<role_width$}    skipped {} ({}): {}\n",
                "",
                skip.person_id,
                skip.candidate.label(),
                skip.reason.label()
            ));
        }
    }
    let ephemeral = resolved.iter().filter(|role| role.rule == Rule::Ephemeral).count();
    text.push_str(&format!(
        "{} bound to People, {} ephemeral\n",
        plural(resolved.len() - ephemeral, "role", "roles"),
        ephemeral
    ));
    text
}

#[derive(Serialize)]
struct RejectionJson<'a> {
    code: &'static str,
    message: &'a str,
}

pub fn resolution_json(recipe_file: &str, resolved: &[Resolved], rejections: &[Rejection]) -> Vec<u8> {
    #[derive(Serialize)]
    struct Document<'a> {
        format: &'static str,
        recipe: String,
        starts_anything: bool,
        roles: Vec<RoleJson<'a>>,
        rejections: Vec<RejectionJson<'a>>,
    }
    #[derive(Serialize)]
    struct RoleJson<'a> {
        role: &'a str,
        persona: Option<&'a str>,
        person_id: Option<&'a str>,
        rule: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        preference: Option<usize>,
        skipped: Vec<SkipJson<'a>>,
    }
    #[derive(Serialize)]
    struct SkipJson<'a> {
        person_id: &'a str,
        candidate: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        preference: Option<usize>,
        reason: &'static str,
    }
    let rank = |rule: Rule| match rule {
        Rule::Preference(rank) => Some(rank),
        _ => None,
    };
    super::document::json_bytes(&Document {
        format: "acompose.people-resolution.v1",
        recipe: printable(recipe_file),
        starts_anything: false,
        roles: resolved
            .iter()
            .map(|role| RoleJson {
                role: &role.role,
                persona: role.persona.as_deref(),
                person_id: role.person_id.as_deref(),
                rule: role.rule.code(),
                preference: rank(role.rule),
                skipped: role
                    .skipped
                    .iter()
                    .map(|skip| SkipJson {
                        person_id: &skip.person_id,
                        candidate: skip.candidate.code(),
                        preference: rank(skip.candidate),
                        reason: skip.reason.code(),
                    })
                    .collect(),
            })
            .collect(),
        rejections: rejections
            .iter()
            .map(|rejection| RejectionJson { code: rejection.code, message: &rejection.message })
            .collect(),
    })
}

/// Rejected assignments as text.
pub fn rejections_text(rejections: &[Rejection]) -> String {
    rejections.iter().map(|rejection| format!("error[{}]: {}\n", rejection.code, rejection.message)).collect()
}

// ---------------------------------------------------------------------------------------
// Scaffold

/// `people/README.md` as `people init` writes it (only when the file is absent).
pub fn people_readme() -> String {
    format!(
        "# People

Each `<id>.json` here declares one Person ({PERSON_SPEC}): a durable collaborator
you chose and reviewed. A declaration is configuration only: it never starts a
process, and no runtime activity is inferred from it.

- `acompose people add ID --name … --role … --goal …` declares a Person.
- `acompose people edit ID …`, `archive ID` and `restore ID` change one.
- `acompose people import HIRE.json` reviews a {HIRE_SPEC} file; `--save` writes it.
- `acompose people validate` checks this folder offline against the schema mirrors in
  `schemas/`, which are verified against `schemas/people-contracts.lock.json` first.
- `bindings.yaml` ({BINDINGS_SPEC}) optionally pins People to swarm roles;
  `acompose people resolve --recipe FILE` previews how roles are filled.

The file name is the id. Files are written with a fixed key order and a trailing
newline; symlinks are refused.
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding;
    use crate::tree::Position;

    #[test]
    fn findings_render_location_rule_and_hint() {
        let finding = finding::error("too-long", "people/ada.json", "text is longer than the schema allows")
            .at_position(Some(Position { line: 5, column: 11 }))
            .pointer("/properties/goal/maxLength")
            .hint("shorten it");
        assert_eq!(
            findings_text(&[finding]),
            "error[too-long]: text is longer than the schema allows\n  --> people/ada.json:5:11\n  rule: /properties/goal/maxLength\n  hint: shorten it\n"
        );
    }

    #[test]
    fn cards_replace_control_characters() {
        let mut person = Person::new("ada", "Ada\u{1b}[31m", "reviewer", "line one\nline\u{7} two");
        person.archived = true;
        let card = person_text(&person);
        assert!(!card.contains('\u{1b}'));
        assert!(!card.contains('\u{7}'));
        assert!(card.starts_with("ada — Ada\u{fffd}[31m (archived)\n"));
        assert!(card.contains("line one\n                       line\u{fffd} two"));
    }
}
