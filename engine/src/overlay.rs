//! Private overlays: a user's own KDL files, kept outside every repository, that add
//! scoped instructions, narrow or widen a role's selection, select MCP servers for a role
//! and rename a seat — and may
//! redefine nothing else (the person contract). Owns the overlay grammar, its refusals
//! and each role's share of an overlay; reads no file (the driver sets each overlay as a
//! [`SourceFile`] whose origin is its folder and whose relative path is its file name).
//!
//! A composition reads an overlay only through [`role_overlay`], the entries that concern
//! its role: an edit that leaves a role's share unchanged leaves that role's bundle
//! unexecuted and its id unchanged.

use std::fmt::Write as _;

use crate::db::SourceFile;
use crate::diagnostic::{Diagnostic, Parsed, Span, sanitize};
use crate::harness_layout;
use crate::selector::Pattern;
use crate::syntax::{Node, Value, kdl_document};

/// Top-level nodes an overlay may not write, and what each would redefine.
const FORBIDDEN: [(&str, &str); 10] = [
    ("role", "a role"),
    ("personality", "a personality"),
    ("definition", "a definition"),
    ("definitions", "a definition"),
    ("invariant", "the personality invariant"),
    ("personalities", "a role's personality set"),
    ("meld", "a role's personality set"),
    ("person", "the person package"),
    ("library", "a personality library"),
    ("identity", "a role's identity"),
];

/// The nodes an overlay may write.
const ALLOWED: [&str; 5] = ["instruction", "exclude", "admit", "mcp-server", "seat"];

/// One entry of an overlay, with the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OverlayEntry {
    pub line: usize,
    pub effect: Effect,
}

/// What one overlay entry does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Text added to the instructions of the named roles (every role when empty), only
    /// when one of the named repositories is admitted (any when empty), and only for the
    /// named harnesses (every harness when empty): all scopes must hold.
    Instruction { id: String, roles: Vec<String>, repositories: Vec<String>, harnesses: Vec<String>, text: String },
    /// Skills of any provider whose names a pattern matches never enter the role's bundle.
    ExcludeSkill { role: String, pattern: Pattern },
    /// A provider (a request source or a trusted root's repository, by id) is excluded.
    ExcludeRepository { role: String, repository: String },
    /// A repository a trusted root declares is admitted for the role: whole, or the
    /// slice its `skill` selectors match.
    Admit { role: String, repository: String, skills: Vec<Pattern> },
    /// Servers of the home's MCP inventory the role receives, each with where it is
    /// written (an unknown one fails the composition, as in `roles.kdl`).
    McpServers { role: String, names: Vec<(String, Span)> },
    /// A seat of the role answers with another name and pronouns.
    Seat { role: String, seat: String, name: String, pronouns: String },
}

impl Effect {
    /// Whether the entry concerns `role`.
    pub fn concerns(&self, role: &str) -> bool {
        match self {
            Effect::Instruction { roles, .. } => roles.is_empty() || roles.iter().any(|named| named == role),
            Effect::ExcludeSkill { role: named, .. }
            | Effect::ExcludeRepository { role: named, .. }
            | Effect::Admit { role: named, .. }
            | Effect::McpServers { role: named, .. }
            | Effect::Seat { role: named, .. } => named == role,
        }
    }

    /// The roles the entry names (none for an instruction to every role).
    pub fn roles(&self) -> Vec<&str> {
        match self {
            Effect::Instruction { roles, .. } => roles.iter().map(String::as_str).collect(),
            Effect::ExcludeSkill { role, .. }
            | Effect::ExcludeRepository { role, .. }
            | Effect::Admit { role, .. }
            | Effect::McpServers { role, .. }
            | Effect::Seat { role, .. } => vec![role.as_str()],
        }
    }

    /// One line saying what the entry does, for the trace.
    pub fn describe(&self) -> String {
        match self {
            Effect::Instruction { id, repositories, harnesses, .. } => {
                let mut line = format!("adds the instruction `{id}`");
                if !repositories.is_empty() {
                    let _ = write!(line, " where {} is admitted", quoted(repositories));
                }
                if !harnesses.is_empty() {
                    let _ = write!(line, " for {} only", harness_list(harnesses));
                }
                line
            }
            Effect::ExcludeSkill { pattern, .. } => format!("excludes skills matching `{}`", pattern.text),
            Effect::ExcludeRepository { repository, .. } => format!("excludes the repository `{repository}`"),
            Effect::Admit { repository, skills, .. } if skills.is_empty() => {
                format!("admits the whole repository `{repository}`")
            }
            Effect::Admit { repository, skills, .. } => {
                let patterns: Vec<String> = skills.iter().map(|pattern| pattern.text.clone()).collect();
                format!("admits the slice {} of `{repository}`", quoted(&patterns))
            }
            Effect::McpServers { names, .. } => {
                let names: Vec<String> = names.iter().map(|(name, _)| name.clone()).collect();
                format!("selects the MCP servers {}", quoted(&names))
            }
            Effect::Seat { seat, name, pronouns, .. } => format!("names the seat `{seat}` {name} ({pronouns})"),
        }
    }
}

/// `the harness \`claude\`` or `the harnesses \`codex\`, \`gemini\``.
pub fn harness_list(harnesses: &[String]) -> String {
    let noun = if harnesses.len() == 1 { "harness" } else { "harnesses" };
    format!("the {noun} {}", quoted(harnesses))
}

fn quoted(items: &[String]) -> String {
    items.iter().map(|item| format!("`{item}`")).collect::<Vec<_>>().join(", ")
}

/// Every entry of one overlay, or the diagnostics that refuse it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct OverlayRules {
    pub entries: Vec<OverlayEntry>,
}

/// One role's share of one overlay: the overlay's name, the entries that concern the role,
/// and the overlay's diagnostics (a refused overlay refuses every composition).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct RoleOverlay {
    pub name: String,
    pub entries: Vec<OverlayEntry>,
}

impl RoleOverlay {
    /// The trace subject and provider id of the overlay's decisions.
    pub fn subject(&self) -> String {
        format!("overlay:{}", self.name)
    }

    /// Who made a decision, for reasons: `overlay \`team.kdl\``. No line: a reason enters
    /// the bundle's bytes, and a comment added above an entry must not change its id
    /// (diagnostics, which enter no bundle, name the line).
    pub fn at(&self) -> String {
        format!("overlay `{}`", self.name)
    }
}

/// Reads one overlay. Never fails: every mistake is a diagnostic naming the file and line.
#[salsa::tracked(returns(ref))]
pub fn overlay_rules(db: &dyn salsa::Database, file: SourceFile) -> Parsed<OverlayRules> {
    let path = file.display_path(db);
    let document = kdl_document(db, file);
    let mut reading = Reading { path: &path, text: file.bytes(db), diagnostics: document.diagnostics.clone() };
    let mut rules = OverlayRules::default();
    for node in &document.value.nodes {
        if let Some(effect) = reading.entry(node) {
            rules.entries.push(OverlayEntry { line: reading.line(node.span), effect });
        }
    }
    Parsed::new(rules, reading.diagnostics)
}

/// The entries of one overlay that concern `role`, with the overlay's diagnostics.
#[salsa::tracked(returns(ref))]
pub fn role_overlay(db: &dyn salsa::Database, file: SourceFile, role: String) -> Parsed<RoleOverlay> {
    let rules = overlay_rules(db, file);
    let entries = rules.value.entries.iter().filter(|entry| entry.effect.concerns(&role)).cloned().collect();
    Parsed::new(RoleOverlay { name: file.relative_path(db).clone(), entries }, rules.diagnostics.clone())
}

/// The diagnostics of one overlay against the roster: every role it names must exist,
/// and every seat it renames must be a seat of its role. Empty for a sound overlay, so an
/// edit that keeps it sound re-runs no composition through it.
#[salsa::tracked(returns(ref))]
pub fn overlay_problems(
    db: &dyn salsa::Database,
    file: SourceFile,
    person: crate::db::PersonSource,
) -> Vec<Diagnostic> {
    let model_parsed = crate::person::validate::person_model(db, person);
    let model = &model_parsed.value;
    let rules = overlay_rules(db, file);
    let path = file.display_path(db);
    let mut diagnostics = Vec::new();
    for entry in &rules.value.entries {
        for role in entry.effect.roles() {
            let Some(known) = model.role(role) else {
                let roles: Vec<&str> = model.roles.iter().map(|role| role.slug.as_str()).collect();
                diagnostics.push(
                    Diagnostic::error(
                        "overlay-unknown-role",
                        format!("line {}: role `{}` is not in `{}`", entry.line, sanitize(role), model.source),
                    )
                    .in_file(path.clone())
                    .hint(format!("roles: {}", roles.join(", "))),
                );
                continue;
            };
            if let Effect::Seat { seat, .. } = &entry.effect
                && !known.seats.iter().any(|candidate| &candidate.key == seat)
            {
                let seats: Vec<&str> = known.seats.iter().map(|seat| seat.key.as_str()).collect();
                diagnostics.push(
                    Diagnostic::error(
                        "overlay-unknown-seat",
                        format!("line {}: role `{role}` has no seat `{}`", entry.line, sanitize(seat)),
                    )
                    .in_file(path.clone())
                    .hint(format!("seats of `{role}`: {}", seats.join(", "))),
                );
            }
        }
    }
    diagnostics
}

/// The roster with every overlay's seat names applied (later overlays win) and their
/// digests recorded: what `person.json`, `ROSTER.md` and `acompose overlay` show. Errors
/// of any overlay refuse it.
pub fn overlaid_model(
    db: &dyn salsa::Database,
    person: crate::db::PersonSource,
    overlays: &[SourceFile],
) -> Parsed<crate::person::PersonModel> {
    let mut model = crate::person::validate::person_model(db, person).value.clone();
    let mut diagnostics = Vec::new();
    for file in overlays {
        let rules = overlay_rules(db, *file);
        diagnostics.extend(rules.diagnostics.iter().cloned());
        diagnostics.extend(overlay_problems(db, *file, person).iter().cloned());
        model.overlays.push(overlay_digest(file.bytes(db)));
        for entry in &rules.value.entries {
            let Effect::Seat { role, seat, name, pronouns } = &entry.effect else { continue };
            let target = model.roles.iter_mut().find(|candidate| &candidate.slug == role);
            if let Some(target) = target.and_then(|role| role.seats.iter_mut().find(|candidate| &candidate.key == seat))
            {
                target.name = name.clone();
                target.pronouns = pronouns.clone();
            }
        }
    }
    Parsed::new(model, diagnostics)
}

/// The digest person.json records for an overlay: of its bytes, never its path or text.
pub fn overlay_digest(bytes: &[u8]) -> String {
    format!("blake3:{}", blake3::hash(bytes).to_hex())
}

/// The state of reading one overlay.
struct Reading<'a> {
    path: &'a str,
    text: &'a [u8],
    diagnostics: Vec<Diagnostic>,
}

impl Reading<'_> {
    /// The 1-based line a span starts on.
    fn line(&self, span: Span) -> usize {
        let end = span.offset.min(self.text.len());
        1 + self.text[..end].iter().filter(|byte| **byte == b'\n').count()
    }

    fn error(&mut self, code: &'static str, span: Span, message: String, hint: impl Into<String>) {
        self.diagnostics.push(Diagnostic::error(code, message).in_file(self.path).at(Some(span)).hint(hint));
    }

    /// One top-level node: an entry, or a diagnostic.
    fn entry(&mut self, node: &Node) -> Option<Effect> {
        if let Some((_, what)) = FORBIDDEN.iter().find(|(name, _)| *name == node.name) {
            let name = node.arguments.first().and_then(|argument| argument.value.as_str()).map(sanitize);
            let target = name.map_or_else(|| (*what).to_owned(), |name| format!("{what} (`{name}`)"));
            self.error(
                "overlay-redefines",
                node.name_span,
                format!("an overlay may not redefine {target}: `{}` belongs to the person package", node.name),
                "an overlay may add `instruction`s, `exclude` or `admit` selection rules and `mcp-server` selections, and rename a `seat`; change the person package itself to change anything else",
            );
            return None;
        }
        match node.name.as_str() {
            "instruction" => self.instruction(node),
            "exclude" => self.exclude(node),
            "admit" => self.admit(node),
            "mcp-server" => self.mcp_servers(node),
            "seat" => self.seat(node),
            other => {
                let mut hint = format!("an overlay's nodes are {}", ALLOWED.join(", "));
                if let Some(suggestion) = crate::suggest::did_you_mean(other, ALLOWED.iter().copied()) {
                    hint = format!("{suggestion}; {hint}");
                }
                self.error(
                    "overlay-unknown-node",
                    node.name_span,
                    format!("unknown overlay node `{}`", sanitize(other)),
                    hint,
                );
                None
            }
        }
    }

    /// A string property; reports a missing or non-string one when `required`.
    fn property(&mut self, node: &Node, name: &str, required: bool) -> Option<String> {
        match node.property(name) {
            Some(property) => match &property.value {
                Value::String(text) if !text.trim().is_empty() => Some(text.clone()),
                _ => {
                    self.error(
                        "overlay-property",
                        property.span,
                        format!("`{}` needs `{name}` as a non-empty string", node.name),
                        format!("write `{name}=\"…\"`"),
                    );
                    None
                }
            },
            None if required => {
                self.error(
                    "overlay-property",
                    node.name_span,
                    format!("`{}` needs the property `{name}`", node.name),
                    format!("write `{name}=\"…\"`"),
                );
                None
            }
            None => None,
        }
    }

    /// Reports every property of `node` not among `known`.
    fn only_properties(&mut self, node: &Node, known: &[&str]) -> bool {
        let mut fine = true;
        for property in &node.properties {
            if !known.contains(&property.name.as_str()) {
                fine = false;
                self.error(
                    "overlay-property",
                    property.span,
                    format!("`{}` takes no property `{}`", node.name, sanitize(&property.name)),
                    format!("`{}` takes {}", node.name, known.join(", ")),
                );
            }
        }
        fine
    }

    /// The string arguments of a node, each non-empty.
    fn strings(&mut self, node: &Node) -> Vec<String> {
        let mut values = Vec::new();
        for argument in &node.arguments {
            match &argument.value {
                Value::String(text) if !text.trim().is_empty() => values.push(text.clone()),
                _ => self.error(
                    "overlay-argument",
                    argument.span,
                    format!("`{}` takes non-empty strings", node.name),
                    "quote the value",
                ),
            }
        }
        values
    }

    /// `instruction "ID" { role "R"…; repository "OWNER/REPO"…; text "…" }`.
    fn instruction(&mut self, node: &Node) -> Option<Effect> {
        self.only_properties(node, &[]);
        let id = self.identifier(node)?;
        let (mut roles, mut repositories, mut harnesses, mut text) = (Vec::new(), Vec::new(), Vec::new(), None);
        for child in &node.children {
            match child.name.as_str() {
                "role" => roles.extend(self.strings(child)),
                "repository" => repositories.extend(self.strings(child)),
                "harness" => self.harnesses(child, &mut harnesses),
                "text" => text = self.strings(child).into_iter().next(),
                other => self.error(
                    "overlay-unknown-node",
                    child.name_span,
                    format!("unknown node `{}` in an `instruction`", sanitize(other)),
                    "an `instruction` holds `role`, `repository`, `harness` and one `text`",
                ),
            }
        }
        let Some(text) = text else {
            self.error(
                "overlay-property",
                node.name_span,
                format!("instruction `{id}` has no `text`"),
                "write `text \"…\"` inside the instruction",
            );
            return None;
        };
        Some(Effect::Instruction { id, roles, repositories, harnesses, text })
    }

    /// `harness "NAME"…` of an instruction: each a harness of the layout table, kept once
    /// and in the table's order (so the order written changes nothing).
    fn harnesses(&mut self, child: &Node, harnesses: &mut Vec<String>) {
        if child.arguments.is_empty() {
            self.error(
                "overlay-argument",
                child.name_span,
                "`harness` names at least one harness".to_owned(),
                format!("harnesses: {}", harness_layout::harness_names().join(", ")),
            );
        }
        for argument in &child.arguments {
            let Value::String(name) = &argument.value else {
                self.error(
                    "overlay-argument",
                    argument.span,
                    "`harness` takes harness names".to_owned(),
                    "quote the name",
                );
                continue;
            };
            if harness_layout::layout(name).is_none() {
                let names = harness_layout::harness_names();
                let mut hint = format!("harnesses: {}", names.join(", "));
                if let Some(suggestion) = crate::suggest::did_you_mean(name, names.iter().copied()) {
                    hint = format!("{suggestion}; {hint}");
                }
                self.error(
                    "overlay-unknown-harness",
                    argument.span,
                    format!("`{}` is not a harness", sanitize(name)),
                    hint,
                );
            } else if !harnesses.contains(name) {
                harnesses.push(name.clone());
            }
        }
        let order = harness_layout::harness_names();
        harnesses.sort_by_key(|name| order.iter().position(|known| known == name));
    }

    /// The one argument of an `instruction`: a kebab-case id.
    fn identifier(&mut self, node: &Node) -> Option<String> {
        let id = self.strings(node).into_iter().next();
        match id {
            Some(id) if node.arguments.len() == 1 && is_kebab(&id) => Some(id),
            _ => {
                self.error(
                    "overlay-argument",
                    node.name_span,
                    "`instruction` takes one kebab-case id".to_owned(),
                    "write `instruction \"team-review\" { … }`",
                );
                None
            }
        }
    }

    /// `exclude role="R" skill="PATTERN"` or `exclude role="R" repository="ID"`.
    fn exclude(&mut self, node: &Node) -> Option<Effect> {
        if !self.only_properties(node, &["role", "skill", "repository"]) {
            return None;
        }
        let role = self.property(node, "role", true)?;
        match (node.property("skill"), node.property("repository")) {
            (Some(_), None) => {
                let span = node.property("skill").map_or(node.name_span, |property| property.span);
                let text = self.property(node, "skill", true)?;
                self.pattern(&text, span)?;
                Some(Effect::ExcludeSkill { role, pattern: Pattern { text, span } })
            }
            (None, Some(_)) => {
                let repository = self.property(node, "repository", true)?;
                Some(Effect::ExcludeRepository { role, repository })
            }
            _ => {
                self.error(
                    "overlay-property",
                    node.name_span,
                    "`exclude` names exactly one of `skill` and `repository`".to_owned(),
                    "write `exclude role=\"R\" skill=\"PATTERN\"` or `exclude role=\"R\" repository=\"ID\"`",
                );
                None
            }
        }
    }

    /// `admit role="R" repository="ID" { skill "PATTERN"… }`.
    fn admit(&mut self, node: &Node) -> Option<Effect> {
        if !self.only_properties(node, &["role", "repository"]) {
            return None;
        }
        let role = self.property(node, "role", true)?;
        let repository = self.property(node, "repository", true)?;
        let mut skills = Vec::new();
        for child in &node.children {
            if child.name != "skill" {
                self.error(
                    "overlay-unknown-node",
                    child.name_span,
                    format!("unknown node `{}` in an `admit`", sanitize(&child.name)),
                    "an `admit` holds `skill \"PATTERN\"` selectors, as a `repository` of roles.kdl does",
                );
                continue;
            }
            for argument in &child.arguments {
                if let Value::String(text) = &argument.value
                    && self.pattern(text, argument.span).is_some()
                {
                    skills.push(Pattern { text: text.clone(), span: argument.span });
                }
            }
        }
        Some(Effect::Admit { role, repository, skills })
    }

    /// `mcp-server role="R" "NAME"…`: servers of the home's MCP inventory for the role.
    fn mcp_servers(&mut self, node: &Node) -> Option<Effect> {
        let properties_known = self.only_properties(node, &["role"]);
        if !node.children.is_empty() {
            self.error(
                "overlay-unknown-node",
                node.name_span,
                "`mcp-server` takes no children".to_owned(),
                "write `mcp-server role=\"R\" \"NAME\" …`",
            );
            return None;
        }
        if !properties_known {
            return None;
        }
        let role = self.property(node, "role", true)?;
        let mut names = Vec::new();
        for argument in &node.arguments {
            match &argument.value {
                Value::String(text) if !text.trim().is_empty() => names.push((text.clone(), argument.span)),
                _ => self.error(
                    "overlay-argument",
                    argument.span,
                    "`mcp-server` takes server names as non-empty strings".to_owned(),
                    "quote the name",
                ),
            }
        }
        if node.arguments.is_empty() {
            self.error(
                "overlay-argument",
                node.name_span,
                "`mcp-server` names at least one server".to_owned(),
                "write `mcp-server role=\"R\" \"NAME\" …` with the names of `<home>/mcp.kdl`",
            );
        }
        (names.len() == node.arguments.len() && !names.is_empty()).then_some(Effect::McpServers { role, names })
    }

    /// `seat role="R" seat="KEY" name="NAME" pronouns="P"`: nothing else about a seat.
    fn seat(&mut self, node: &Node) -> Option<Effect> {
        for property in &node.properties {
            if !["role", "seat", "name", "pronouns"].contains(&property.name.as_str()) {
                self.error(
                    "overlay-redefines",
                    property.span,
                    format!(
                        "an overlay may not redefine a seat's `{}`: only its name and pronouns",
                        sanitize(&property.name)
                    ),
                    "change the seat's routing in the person package",
                );
                return None;
            }
        }
        let role = self.property(node, "role", true)?;
        let seat = self.property(node, "seat", true)?;
        let name = self.property(node, "name", true)?;
        let pronouns = self.property(node, "pronouns", true)?;
        Some(Effect::Seat { role, seat, name, pronouns })
    }

    /// Checks a selector's glob; reports one that does not compile.
    fn pattern(&mut self, text: &str, span: Span) -> Option<()> {
        match crate::selector::compile(text) {
            Ok(_) => Some(()),
            Err(error) => {
                let mut message = String::new();
                let _ = write!(
                    message,
                    "selector `{}` is not a valid glob: {}",
                    sanitize(text),
                    sanitize(&error.to_string())
                );
                self.error("overlay-selector", span, message, "use `*`, `?` and `[…]` as in roles.kdl selectors");
                None
            }
        }
    }
}

fn is_kebab(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}
