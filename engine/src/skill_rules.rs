//! The Agent Skills rules (agentskills.io) as harnesses apply them to one ordinary skill:
//! frontmatter present and valid YAML, `name`, `description`, `compatibility` and
//! `metadata` within the specification's limits, and which other fields a harness
//! defines. Owns the rule codes and the consequence each finding has in a harness; it
//! does not decide what a finding does to a composition (that is the skill policy in
//! `compose`) and it never reads a file.

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::diagnostic::{Diagnostic, Severity, Span, sanitize};

/// The specification's limits, in characters.
pub(crate) const NAME_MAX_CHARACTERS: usize = 64;
pub(crate) const DESCRIPTION_MAX_CHARACTERS: usize = 1024;
pub(crate) const COMPATIBILITY_MAX_CHARACTERS: usize = 500;

/// Fields outside the specification that a major harness defines, with the harness that
/// defines them. Accepted; reported only as detail.
pub(crate) const HARNESS_EXTENSION_FIELDS: [(&str, &str); 8] = [
    ("user-invocable", "Claude Code: whether the skill appears as a slash command"),
    ("disable-model-invocation", "Claude Code: only the user may invoke the skill"),
    ("argument-hint", "Claude Code: the argument hint shown for the slash command"),
    ("model", "Claude Code: the model used while the skill runs"),
    ("context", "Claude Code: `fork` runs the skill in a separate sub-agent context"),
    ("agent", "Claude Code: the sub-agent type used with `context: fork`"),
    ("hooks", "Claude Code: hooks scoped to the skill's lifetime"),
    ("hidden", "harness extension named by the acompose contract: hides the skill from menus"),
];

/// What findings do to a composition: `warn` delivers the skill with warnings, `strict`
/// makes violations errors, `skip` leaves the skill out (`invalid-skill`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum SkillPolicy {
    #[default]
    Warn,
    Strict,
    Skip,
}

impl SkillPolicy {
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        match name {
            "warn" => Some(SkillPolicy::Warn),
            "strict" => Some(SkillPolicy::Strict),
            "skip" => Some(SkillPolicy::Skip),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SkillPolicy::Warn => "warn",
            SkillPolicy::Strict => "strict",
            SkillPolicy::Skip => "skip",
        }
    }
}

/// How serious a finding is before any policy applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FindingLevel {
    /// Breaks a rule the specification states: a harness may refuse the skill.
    Violation,
    /// Not a rule of the specification, but likely a mistake (an unknown field).
    Doubt,
    /// A harness extension field: accepted, reported only in detail.
    Extension,
}

impl FindingLevel {
    pub fn name(self) -> &'static str {
        match self {
            FindingLevel::Violation => "violation",
            FindingLevel::Doubt => "doubt",
            FindingLevel::Extension => "extension",
        }
    }
}

impl FindingLevel {
    /// The level of a finding [`check_skill`] made, read back from its severity: a
    /// violation is an error before any policy applies, a doubt a warning, an extension
    /// detail.
    pub fn of(finding: &Diagnostic) -> Self {
        match finding.severity {
            Severity::Error => FindingLevel::Violation,
            Severity::Warning | Severity::Note => FindingLevel::Doubt,
            Severity::Detail => FindingLevel::Extension,
        }
    }

    fn severity(self) -> Severity {
        match self {
            FindingLevel::Violation => Severity::Error,
            FindingLevel::Doubt => Severity::Warning,
            FindingLevel::Extension => Severity::Detail,
        }
    }
}

/// What a harness does about a finding [`check_skill`] made, in one sentence: its first
/// hint.
pub fn consequence(finding: &Diagnostic) -> &str {
    finding.hints.first().map_or("", String::as_str)
}

/// A finding of [`check_skill`] as a diagnostic of `file` under a policy: violations take
/// `violation_severity` (warning or error), doubts stay warnings, extensions detail.
pub fn in_file(finding: &Diagnostic, file: &str, violation_severity: Severity) -> Diagnostic {
    let mut diagnostic = finding.clone().in_file(file);
    if FindingLevel::of(finding) == FindingLevel::Violation {
        diagnostic.severity = violation_severity;
    }
    diagnostic
}

/// What the frontmatter says, as YAML reads it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Frontmatter {
    pub name: Option<String>,
    pub description: Option<String>,
}

/// The rules applied to one ordinary skill's `SKILL.md` in the folder `folder`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct SkillCheck {
    pub frontmatter: Frontmatter,
    /// Findings as diagnostics without a file: the span is a byte range of the whole
    /// `SKILL.md`, the severity its [`FindingLevel`] and the first hint its consequence.
    pub findings: Vec<Diagnostic>,
}

impl SkillCheck {
    pub(crate) fn has_violations(&self) -> bool {
        self.findings.iter().any(|finding| FindingLevel::of(finding) == FindingLevel::Violation)
    }
}

/// The longest stretch of a value a finding marks.
const MARKED_VALUE_BYTES: usize = 24;

const NOT_LOADED: &str =
    "harnesses that follow the specification (Claude Code, Codex, Gemini CLI) will not load this skill";
const METADATA_SHAPE: &str = "the specification makes `metadata` a map of strings; a harness that relies on it may drop the field or refuse the skill";
const LISTED_WRONGLY: &str =
    "the reference validator (skills-ref) rejects this skill; harnesses may skip it or list it under another name";

/// The check of one ordinary skill's `SKILL.md`, its folder taken from the file's path
/// (`.agents/skills/<folder>/SKILL.md`): the per-file firewall, so editing one skill
/// re-checks only that skill.
/// The folder of a skill's entry file (`.agents/skills/<folder>/SKILL.md`).
pub(crate) fn skill_folder_of(relative: &str) -> &str {
    relative.rsplit('/').nth(1).unwrap_or_default()
}

/// Checks one `SKILL.md`'s bytes against the specification.
pub fn check_skill(bytes: &[u8], folder: &str) -> SkillCheck {
    let mut check = SkillCheck::default();
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => {
            check.findings.push(finding(
                "skill-not-utf8",
                FindingLevel::Violation,
                Span::new(error.valid_up_to(), 1),
                "`SKILL.md` is not valid UTF-8".to_owned(),
                NOT_LOADED,
            ));
            return check;
        }
    };
    let frontmatter = match read_frontmatter(text) {
        Ok(frontmatter) => frontmatter,
        Err(unreadable) => {
            check.findings.push(unreadable);
            return check;
        }
    };
    check_fields(&mut check, &frontmatter, folder);
    check_required_fields(&mut check, &frontmatter.fields);
    check
}

/// The frontmatter's top-level fields, with where its block starts in the file.
struct ReadFrontmatter<'a> {
    /// The byte offset of the block in the whole file.
    start: usize,
    block: &'a str,
    fields: Vec<Field>,
}

impl ReadFrontmatter<'_> {
    /// The span in the whole file of `length` bytes from a marker inside the block.
    fn span_of(&self, marker: Marker, length: usize) -> Span {
        Span::new(self.start + offset_of(self.block, marker), length)
    }
}

/// Finds the frontmatter block and reads its fields, or the one finding that stops the
/// check: no block, a block that is not closed, not YAML, or not a mapping.
fn read_frontmatter(text: &str) -> Result<ReadFrontmatter<'_>, Diagnostic> {
    let Some((start, end)) = frontmatter_block(text) else {
        let (code, message) = if text.starts_with("---") {
            ("skill-frontmatter-unclosed", "the frontmatter is not closed by a `---` line")
        } else {
            ("skill-frontmatter-missing", "`SKILL.md` does not start with a `---` frontmatter block")
        };
        return Err(finding(
            code,
            FindingLevel::Violation,
            Span::new(0, 3.min(text.len())),
            message.to_owned(),
            NOT_LOADED,
        ));
    };
    let block = &text[start..end];
    let fields = match read_fields(block) {
        Ok(fields) => fields,
        Err((marker, info)) => {
            return Err(finding(
                "skill-frontmatter-yaml",
                FindingLevel::Violation,
                Span::new(start + offset_of(block, marker), 1),
                format!("the frontmatter is not valid YAML: {}", sanitize(&info)),
                "harnesses parse frontmatter with a YAML parser and will not load this skill; quote values holding `: ` or `#`",
            ));
        }
    };
    let Some(fields) = fields else {
        return Err(finding(
            "skill-frontmatter-not-mapping",
            FindingLevel::Violation,
            Span::new(start, block.len().min(1)),
            "the frontmatter is not a mapping of `key: value` fields".to_owned(),
            NOT_LOADED,
        ));
    };
    Ok(ReadFrontmatter { start, block, fields })
}

/// Checks each field in order: a repeated key once, then its value by the rule of its key.
fn check_fields(check: &mut SkillCheck, frontmatter: &ReadFrontmatter<'_>, folder: &str) {
    let span_of = |marker: Marker, length: usize| frontmatter.span_of(marker, length);
    let mut seen: Vec<&str> = Vec::new();
    for field in &frontmatter.fields {
        let key_span = span_of(field.key_marker, field.key.len());
        if seen.contains(&field.key.as_str()) {
            check.findings.push(finding(
                "skill-field-duplicate",
                FindingLevel::Violation,
                key_span,
                format!("the field `{}` appears more than once", sanitize(&field.key)),
                "strict YAML parsers (the reference validator's among them) refuse duplicate keys; others keep only one value",
            ));
            continue;
        }
        seen.push(&field.key);
        // Long values are marked by their start only, so a snippet stays readable.
        // A block map or list is marked by its field's key: yaml-rust2 places the start of a
        // block collection after its first key, which would mislead.
        let value_span = match field.value.text() {
            Some(text) => span_of(field.value_marker, text.len().clamp(1, MARKED_VALUE_BYTES)),
            None => key_span,
        };
        match field.key.as_str() {
            "name" => check_name_field(check, &field.value, folder, value_span),
            "description" => check_description_field(check, &field.value, value_span),
            "compatibility" => check_compatibility(&mut check.findings, &field.value, value_span),
            "metadata" => check_metadata(&mut check.findings, &field.value, value_span, &span_of),
            "allowed-tools" => check_allowed_tools(&mut check.findings, &field.value, value_span),
            "license" => {}
            other => check_other_field(&mut check.findings, other, key_span),
        }
    }
}

/// The `name` field: a single line of text, kept as the frontmatter's name and checked
/// against the specification and the folder.
fn check_name_field(check: &mut SkillCheck, value: &Value, folder: &str, span: Span) {
    let Some(name) = value.text() else {
        check.findings.push(finding(
            "skill-name-invalid",
            FindingLevel::Violation,
            span,
            "`name` is not a single line of text".to_owned(),
            NOT_LOADED,
        ));
        return;
    };
    check.frontmatter.name = Some(name.to_owned());
    check_name(&mut check.findings, name, folder, span);
}

/// The `description` field: text that is not blank, kept as the frontmatter's
/// description, within the specification's length.
fn check_description_field(check: &mut SkillCheck, value: &Value, span: Span) {
    let text = value.text().unwrap_or("");
    if text.trim().is_empty() {
        check.findings.push(finding(
            "skill-description-missing",
            FindingLevel::Violation,
            span,
            "`description` is empty or not text".to_owned(),
            "harnesses choose a skill by its description; without one they will not load it",
        ));
        return;
    }
    check.frontmatter.description = Some(text.to_owned());
    let characters = text.chars().count();
    if characters > DESCRIPTION_MAX_CHARACTERS {
        check.findings.push(finding(
            "skill-description-length",
            FindingLevel::Violation,
            span,
            format!("`description` has {characters} characters; the limit is {DESCRIPTION_MAX_CHARACTERS}"),
            "Codex skips this skill; the reference validator (skills-ref) rejects it",
        ));
    }
}

/// The `compatibility` field: text within the specification's length.
fn check_compatibility(findings: &mut Vec<Diagnostic>, value: &Value, span: Span) {
    let characters = value.text().map(|text| text.chars().count());
    match characters {
        Some(count) if count <= COMPATIBILITY_MAX_CHARACTERS => {}
        Some(count) => findings.push(finding(
            "skill-compatibility-length",
            FindingLevel::Violation,
            span,
            format!("`compatibility` has {count} characters; the limit is {COMPATIBILITY_MAX_CHARACTERS}"),
            LISTED_WRONGLY,
        )),
        None => findings.push(finding(
            "skill-compatibility-length",
            FindingLevel::Violation,
            span,
            "`compatibility` is not text".to_owned(),
            LISTED_WRONGLY,
        )),
    }
}

/// The `allowed-tools` field: text or a list of text.
fn check_allowed_tools(findings: &mut Vec<Diagnostic>, value: &Value, span: Span) {
    let valid = match value {
        Value::Text { .. } => true,
        Value::List(items) => items.iter().all(|item| matches!(item, Value::Text { .. })),
        _ => false,
    };
    if !valid {
        findings.push(finding(
            "skill-allowed-tools-invalid",
            FindingLevel::Doubt,
            span,
            "`allowed-tools` is neither text nor a list of text".to_owned(),
            "the specification makes `allowed-tools` a space-separated list of tool names; a harness may ignore a value of another shape",
        ));
    }
}

/// A field the specification does not define: a known harness extension, or unknown.
fn check_other_field(findings: &mut Vec<Diagnostic>, key: &str, span: Span) {
    match HARNESS_EXTENSION_FIELDS.iter().find(|(known, _)| *known == key) {
        Some((_, source)) => findings.push(finding(
            "skill-field-extension",
            FindingLevel::Extension,
            span,
            format!("`{key}` is a harness extension field ({source})"),
            "accepted: harnesses that do not define it ignore it",
        )),
        None => findings.push(finding(
            "skill-field-unknown",
            FindingLevel::Doubt,
            span,
            format!("`{}` is neither an Agent Skills field nor a known harness extension", sanitize(key)),
            "harnesses ignore it; the reference validator (skills-ref) rejects fields outside the specification",
        )),
    }
}

/// The fields the specification requires, `name` and `description`, when absent.
fn check_required_fields(check: &mut SkillCheck, fields: &[Field]) {
    if check.frontmatter.name.is_none() && !fields.iter().any(|field| field.key == "name") {
        check.findings.push(finding(
            "skill-name-missing",
            FindingLevel::Violation,
            Span::new(0, 3),
            "the frontmatter has no `name`".to_owned(),
            NOT_LOADED,
        ));
    }
    if !fields.iter().any(|field| field.key == "description") {
        check.findings.push(finding(
            "skill-description-missing",
            FindingLevel::Violation,
            Span::new(0, 3),
            "the frontmatter has no `description`".to_owned(),
            "harnesses choose a skill by its description; without one they will not load it",
        ));
    }
}

fn finding(
    code: &'static str,
    level: FindingLevel,
    span: Span,
    message: String,
    consequence: &'static str,
) -> Diagnostic {
    let mut diagnostic = Diagnostic::error(code, message).at(Some(span)).hint(consequence);
    diagnostic.severity = level.severity();
    diagnostic
}

fn check_name(findings: &mut Vec<Diagnostic>, name: &str, folder: &str, span: Span) {
    let characters = name.chars().count();
    if characters == 0 || characters > NAME_MAX_CHARACTERS {
        findings.push(finding(
            "skill-name-length",
            FindingLevel::Violation,
            span,
            format!("`name` has {characters} characters; it must have 1 to {NAME_MAX_CHARACTERS}"),
            LISTED_WRONGLY,
        ));
    }
    let allowed =
        name.chars().all(|character| character.is_ascii_lowercase() || character.is_ascii_digit() || character == '-');
    if characters > 0 && (!allowed || name.starts_with('-') || name.ends_with('-') || name.contains("--")) {
        findings.push(finding(
            "skill-name-characters",
            FindingLevel::Violation,
            span,
            format!(
                "`name: {}` must be lowercase letters, digits and single hyphens, not at either end",
                sanitize(name)
            ),
            LISTED_WRONGLY,
        ));
    }
    if name != folder {
        findings.push(finding(
            "skill-name-mismatch",
            FindingLevel::Violation,
            span,
            format!("`name: {}` differs from its folder `{}`", sanitize(name), sanitize(folder)),
            "the specification requires the name to equal the folder; harnesses list the skill under one name and look it up under the other",
        ));
    }
}

fn check_metadata(findings: &mut Vec<Diagnostic>, value: &Value, span: Span, span_of: &dyn Fn(Marker, usize) -> Span) {
    let Value::Map(entries) = value else {
        findings.push(finding(
            "skill-metadata-not-map",
            FindingLevel::Violation,
            span,
            "`metadata` is not a map of `key: value` strings".to_owned(),
            METADATA_SHAPE,
        ));
        return;
    };
    for (key, marker, entry) in entries {
        match entry {
            Value::Text { plain: true, text } if !reads_as_text(text) => findings.push(finding(
                "skill-metadata-not-string",
                FindingLevel::Doubt,
                span_of(*marker, key.len()),
                format!("`metadata.{}` is read as a number, boolean or null, not a string", sanitize(key)),
                "YAML parsers in harnesses read it as a non-string; quote the value",
            )),
            Value::Text { .. } => {}
            _ => findings.push(finding(
                "skill-metadata-not-map",
                FindingLevel::Violation,
                span_of(*marker, key.len()),
                format!("`metadata.{}` is not a string", sanitize(key)),
                METADATA_SHAPE,
            )),
        }
    }
}

/// Whether a plain scalar stays a string under the YAML 1.2 core schema.
fn reads_as_text(text: &str) -> bool {
    let lowered = text.to_ascii_lowercase();
    if ["", "~", "null", "true", "false", ".inf", "-.inf", "+.inf", ".nan"].contains(&lowered.as_str()) {
        return false;
    }
    if text.parse::<i64>().is_ok() || text.parse::<f64>().is_ok() {
        return false;
    }
    let hex_or_octal = |prefix: &str, radix: u32| {
        text.strip_prefix(prefix).is_some_and(|digits| !digits.is_empty() && u64::from_str_radix(digits, radix).is_ok())
    };
    !(hex_or_octal("0x", 16) || hex_or_octal("0o", 8))
}

/// The frontmatter block: the byte range between the opening and the closing `---` line.
pub(crate) fn frontmatter_block(text: &str) -> Option<(usize, usize)> {
    let first_line_end = text.find('\n')?;
    if text[..first_line_end].trim_end_matches('\r') != "---" {
        return None;
    }
    let start = first_line_end + 1;
    let mut offset = start;
    for line in text[start..].split_inclusive('\n') {
        if line.trim_end_matches(['\n', '\r']) == "---" {
            return Some((start, offset));
        }
        offset += line.len();
    }
    None
}

/// The byte offset inside `block` of a yaml-rust2 marker (lines from 1, columns from 0,
/// in characters).
fn offset_of(block: &str, marker: Marker) -> usize {
    let mut offset = 0;
    for (index, line) in block.split_inclusive('\n').enumerate() {
        if index + 1 == marker.line() {
            return offset + line.char_indices().nth(marker.col()).map_or(line.len(), |(byte, _)| byte);
        }
        offset += line.len();
    }
    block.len()
}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Text { plain: bool, text: String },
    Map(Vec<(String, Marker, Value)>),
    List(Vec<Value>),
    Other,
}

impl Value {
    fn text(&self) -> Option<&str> {
        match self {
            Value::Text { text, .. } => Some(text),
            _ => None,
        }
    }
}

struct Field {
    key: String,
    key_marker: Marker,
    value: Value,
    value_marker: Marker,
}

/// Bound the walk: frontmatter is small, and hostile input must stay cheap (the value
/// reader recurses once per level of nesting).
const MAX_EVENTS: usize = 10_000;
const MAX_DEPTH: usize = 32;

/// Reads the top-level fields. `Ok(None)` when the document is not a mapping; an empty
/// block is an empty mapping.
fn read_fields(block: &str) -> Result<Option<Vec<Field>>, (Marker, String)> {
    let mut parser = Parser::new_from_str(block);
    let mut events = Vec::new();
    let mut depth = 0usize;
    loop {
        let (event, marker) = parser.next_token().map_err(|error| (*error.marker(), error.info().to_owned()))?;
        if events.len() > MAX_EVENTS {
            return Err((marker, "the frontmatter is too large".to_owned()));
        }
        match event {
            Event::MappingStart(..) | Event::SequenceStart(..) => depth += 1,
            Event::MappingEnd | Event::SequenceEnd => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_DEPTH {
            return Err((marker, "the frontmatter is nested too deeply".to_owned()));
        }
        let end = event == Event::StreamEnd;
        events.push((event, marker));
        if end {
            break;
        }
    }
    let mut index = 0;
    while index < events.len() && matches!(events[index].0, Event::StreamStart | Event::DocumentStart) {
        index += 1;
    }
    match events.get(index).map(|(event, _)| event) {
        Some(Event::MappingStart(..)) => {}
        Some(Event::StreamEnd | Event::DocumentEnd) | None => return Ok(Some(Vec::new())),
        Some(_) => return Ok(None),
    }
    index += 1;
    let mut fields = Vec::new();
    while let Some((event, key_marker)) = events.get(index) {
        if *event == Event::MappingEnd {
            break;
        }
        let key = match event {
            Event::Scalar(text, ..) => text.clone(),
            _ => return Ok(None),
        };
        let key_marker = *key_marker;
        index += 1;
        let value_marker = events.get(index).map_or(key_marker, |(_, marker)| *marker);
        let (value, next) = read_value(&events, index);
        index = next;
        fields.push(Field { key, key_marker, value, value_marker });
    }
    Ok(Some(fields))
}

/// Reads one value starting at `index`; returns it and the index after it.
fn read_value(events: &[(Event, Marker)], index: usize) -> (Value, usize) {
    match events.get(index).map(|(event, _)| event) {
        Some(Event::Scalar(text, style, ..)) => {
            (Value::Text { plain: *style == TScalarStyle::Plain, text: text.clone() }, index + 1)
        }
        Some(Event::MappingStart(..)) => {
            let mut entries = Vec::new();
            let mut next = index + 1;
            while let Some((event, marker)) = events.get(next) {
                match event {
                    Event::MappingEnd => return (Value::Map(entries), next + 1),
                    Event::Scalar(key, ..) => {
                        let key = key.clone();
                        let marker = *marker;
                        let (value, after) = read_value(events, next + 1);
                        entries.push((key, marker, value));
                        next = after;
                    }
                    _ => {
                        let (_, after) = read_value(events, next);
                        let (_, after) = read_value(events, after);
                        entries.push((String::new(), *marker, Value::Other));
                        next = after;
                    }
                }
            }
            (Value::Map(entries), next)
        }
        Some(Event::SequenceStart(..)) => {
            let mut items = Vec::new();
            let mut next = index + 1;
            while let Some((event, _)) = events.get(next) {
                if *event == Event::SequenceEnd {
                    return (Value::List(items), next + 1);
                }
                let (item, after) = read_value(events, next);
                items.push(item);
                next = after;
            }
            (Value::List(items), next)
        }
        Some(_) => (Value::Other, index + 1),
        None => (Value::Other, index),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(text: &str, folder: &str) -> Vec<&'static str> {
        check_skill(text.as_bytes(), folder).findings.iter().map(|finding| finding.code).collect()
    }

    #[test]
    fn a_valid_skill_has_no_findings() {
        let text = "---\nname: good-skill\ndescription: >\n  Folded text.\nmetadata:\n  author: \"x\"\n---\nbody\n";
        let check = check_skill(text.as_bytes(), "good-skill");
        assert!(check.findings.is_empty(), "{:?}", check.findings);
        assert_eq!(check.frontmatter.description.as_deref(), Some("Folded text.\n"));
    }

    #[test]
    fn an_unquoted_colon_is_not_yaml() {
        assert_eq!(codes("---\nname: a\ndescription: Use when: always\n---\n", "a"), ["skill-frontmatter-yaml"]);
    }

    #[test]
    fn names_follow_the_specification() {
        assert_eq!(codes("---\nname: Bad--name\ndescription: d\n---\n", "Bad--name"), ["skill-name-characters"]);
        assert_eq!(codes("---\nname: other\ndescription: d\n---\n", "this"), ["skill-name-mismatch"]);
        assert_eq!(codes("---\ndescription: d\n---\n", "this"), ["skill-name-missing"]);
    }

    #[test]
    fn extension_and_unknown_fields_are_told_apart() {
        let found = check_skill(b"---\nname: a\ndescription: d\nmodel: x\nflavour: y\n---\n", "a");
        let levels: Vec<_> = found.findings.iter().map(|finding| (finding.code, FindingLevel::of(finding))).collect();
        assert_eq!(
            levels,
            [("skill-field-extension", FindingLevel::Extension), ("skill-field-unknown", FindingLevel::Doubt)]
        );
    }

    #[test]
    fn allowed_tools_is_text_or_a_list_of_text() {
        assert!(codes("---\nname: a\ndescription: d\nallowed-tools: [Read, Edit]\n---\n", "a").is_empty());
        assert_eq!(
            codes("---\nname: a\ndescription: d\nallowed-tools: {read: yes}\n---\n", "a"),
            ["skill-allowed-tools-invalid"]
        );
    }

    #[test]
    fn deep_nesting_is_refused_without_recursing() {
        let text = format!("---\nname: a\ndescription: d\nmetadata: {}{}\n---\n", "[".repeat(5000), "]".repeat(5000));
        assert_eq!(codes(&text, "a"), ["skill-frontmatter-yaml"]);
    }

    #[test]
    fn spans_point_at_the_value() {
        let text = "---\nname: a\ndescription: d\ncompatibility: [x]\nmetadata: 7\n---\n";
        let check = check_skill(text.as_bytes(), "a");
        let marked: Vec<&str> = check
            .findings
            .iter()
            .filter_map(|finding| finding.span)
            .map(|span| &text[span.offset..span.offset + span.length])
            .collect();
        assert_eq!(marked, ["compatibility", "7"]);
    }
}
