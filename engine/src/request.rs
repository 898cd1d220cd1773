//! Compose requests (`request.kdl`) and source declaration files. Owns their grammar and
//! path rules (relative, no `..`) and the person policy's rule that an external-only
//! request names an external person source; it does not read the paths it names.

use std::collections::BTreeMap;

use crate::diagnostic::{Diagnostic, Parsed, Span, sanitize};
use crate::host_config::PersonPolicy;
use crate::person::reader::Reader;
use crate::syntax::{Node, Value, parse_text};

/// How the bundle is delivered to the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Delivery {
    /// Skills are mounted as native skills; instructions are one file.
    NativeSkills,
    /// Everything is also compiled into one `delivery/compiled.md`.
    Compiled,
}

impl Delivery {
    pub fn name(self) -> &'static str {
        match self {
            Delivery::NativeSkills => "native-skills",
            Delivery::Compiled => "compiled",
        }
    }
}

/// Where a request source's skills come from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SourceLocation {
    /// A repository root read by convention (`.agents/skills`, `.agents/composed`,
    /// `.agents/roles.kdl`).
    Root(String),
    /// A declaration file listing instructions and skills explicitly.
    Declaration(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestSource {
    pub id: String,
    pub location: SourceLocation,
    pub required: bool,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Request {
    /// A path relative to the request file, or `roster:core`; `None` is the default.
    pub person_source: Option<String>,
    pub personality_libraries: Vec<String>,
    pub role: Option<(String, Span)>,
    pub delivery: Option<Delivery>,
    pub model_tier: Option<(String, Span)>,
    pub sources: Vec<RequestSource>,
    /// `person-policy "external-only"` refuses the embedded `roster:core` fallback.
    pub person_policy: PersonPolicy,
    /// `skill-policy`: what Agent Skills findings do; `None` is the default (`warn`).
    pub skill_policy: Option<crate::skill_rules::SkillPolicy>,
    /// Whether a `person-source` or `personality-library` node was written but refused:
    /// the person source the request means is then unknown, and nothing is checked
    /// against a roster.
    pub person_nodes_refused: bool,
}

/// Checks a path written in a request: relative, `/`-separated, no `..`, not empty.
pub(crate) fn check_relative_path(text: &str) -> Result<(), &'static str> {
    if text.is_empty() {
        return Err("the path is empty");
    }
    if text.starts_with('/')
        || text.starts_with('\\')
        || text.contains(':') && text.len() > 1 && text.as_bytes()[1] == b':'
    {
        return Err("the path is absolute; paths are relative to the request file");
    }
    if text.split(['/', '\\']).any(|segment| segment == "..") {
        return Err("the path escapes with `..`");
    }
    if text.contains('\0') {
        return Err("the path holds a NUL byte");
    }
    Ok(())
}

/// Checks a path to a person package or library: relative (it may climb with `..`,
/// as packages often sit beside the request's folder), or `roster:core`.
fn package_path_value(reader: &mut Reader<'_>, node: &Node, value: String, span: Span) -> Option<String> {
    if value == "roster:core" {
        return Some(value);
    }
    let absolute = value.starts_with('/') || value.starts_with('\\') || value.as_bytes().get(1) == Some(&b':');
    if value.is_empty() || absolute || value.contains('\0') {
        reader.report(
            "request-path",
            span,
            format!("`{}` on `{}` is not a relative path", sanitize(&value), node.name),
            "write a path relative to the request file's folder, or `roster:core`",
        );
        return None;
    }
    Some(value)
}

/// Which paths a request node accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PathRule {
    /// A person package or library: relative (it may climb with `..`), or `roster:core`.
    PackageOrEmbedded,
    /// A path that stays inside the request's folder.
    StaysInside,
}

fn path_value(reader: &mut Reader<'_>, node: &Node, value: String, span: Span, rule: PathRule) -> Option<String> {
    if rule == PathRule::PackageOrEmbedded {
        return package_path_value(reader, node, value, span);
    }
    match check_relative_path(&value) {
        Ok(()) => Some(value),
        Err(problem) => {
            reader.report(
                "request-path",
                span,
                format!("`{}` on `{}`: {problem}", sanitize(&value), node.name),
                "write a path relative to the request file's folder that stays inside it",
            );
            None
        }
    }
}

const REQUEST_CHILDREN: &[&str] = &[
    "person-source",
    "personality-library",
    "role",
    "delivery",
    "model-tier",
    "source",
    "person-policy",
    "density",
    "identity",
    "boundary-omit",
];

/// Nodes the Go program's requests carry for concepts this project does not model yet.
/// They are read (so such requests compose) and each draws a warning saying it is ignored.
fn warn_unmodelled(reader: &mut Reader<'_>, node: &Node, what: &str) {
    reader.diagnostics.push(
        Diagnostic::warning("request-node-ignored", format!("`{}` is accepted but ignored: {what}", node.name))
            .in_file(reader.path)
            .at(Some(node.name_span))
            .hint("remove the node to silence this warning; docs/compatibility.md lists why"),
    );
}

/// KDL text of a request file, refused unparsed when over [`crate::limits::REQUEST_KDL`].
fn parse_bounded(text: &str, path: &str) -> Parsed<crate::syntax::Document> {
    match crate::limits::REQUEST_KDL.check(text.len(), path) {
        Some(too_large) => Parsed::new(crate::syntax::Document::default(), vec![too_large]),
        None => parse_text(text, path),
    }
}

/// Parses `request.kdl`.
pub fn parse_request(text: &str, path: &str) -> Parsed<Request> {
    let parsed = parse_bounded(text, path);
    let mut diagnostics = parsed.diagnostics;
    let request = unset_request();
    if !diagnostics.is_empty() {
        return Parsed::new(request, diagnostics);
    }
    let mut reader = Reader::new(path);
    let Some(compose) = find_compose_block(&mut reader, &parsed.value.nodes) else {
        if reader.diagnostics.is_empty() {
            reader.report("missing-node", Span::new(0, 0), "the request has no `compose { … }` block", "add one");
        }
        diagnostics.append(&mut reader.diagnostics);
        return Parsed::new(request, diagnostics);
    };
    // Each source is a repository to read: too many are refused before one is.
    let sources = compose.children.iter().filter(|child| child.name == "source").count();
    if let Some(too_many) = crate::limits::REQUEST_SOURCES.check(sources, path) {
        return Parsed::new(request, vec![too_many]);
    }
    reader.argument_count(compose, 0, Some(0));
    reader.allowed_properties(compose, &[]);
    let mut reading =
        ComposeReading { reader, request, seen: BTreeMap::new(), source_ids: BTreeMap::new(), policy_span: None };
    for child in &compose.children {
        reading.read_child(child);
    }
    reading.check_external_only();
    reading.check_role_and_delivery(compose);
    let ComposeReading { mut reader, request, .. } = reading;
    diagnostics.append(&mut reader.diagnostics);
    Parsed::new(request, diagnostics)
}

/// A request with nothing read yet: what a request that does not parse yields.
fn unset_request() -> Request {
    Request {
        person_source: None,
        personality_libraries: Vec::new(),
        role: None,
        delivery: None,
        model_tier: None,
        sources: Vec::new(),
        person_policy: PersonPolicy::Default,
        skill_policy: None,
        person_nodes_refused: false,
    }
}

/// The one top-level `compose` block, reporting every other top-level node.
fn find_compose_block<'n>(reader: &mut Reader<'_>, nodes: &'n [Node]) -> Option<&'n Node> {
    let mut compose = None;
    for node in nodes {
        if node.name != "compose" {
            reader.unknown_node(node, "a request", &["compose"]);
        } else if compose.is_some() {
            reader.report("duplicate-node", node.name_span, "a request holds one `compose` block", "merge them");
        } else {
            compose = Some(node);
        }
    }
    compose
}

/// The state of reading one `compose` block: the request so far and what the
/// rules across its children need to remember.
struct ComposeReading<'a> {
    reader: Reader<'a>,
    request: Request,
    /// Singleton nodes already read, by name.
    seen: BTreeMap<String, Span>,
    /// Source ids already declared, so a second one is refused.
    source_ids: BTreeMap<String, Span>,
    /// Where `person-policy "external-only"` was written, for the rule checked at the end.
    policy_span: Option<Span>,
}

impl ComposeReading<'_> {
    /// Reads one child of `compose` by its name.
    fn read_child(&mut self, child: &Node) {
        let before = self.reader.diagnostics.len();
        self.read_child_node(child);
        if matches!(child.name.as_str(), "person-source" | "personality-library")
            && self.reader.diagnostics[before..].iter().any(Diagnostic::is_error)
        {
            self.request.person_nodes_refused = true;
        }
    }

    /// Reads one child of `compose`, whichever node it is.
    fn read_child_node(&mut self, child: &Node) {
        match child.name.as_str() {
            "person-source" | "role" | "delivery" | "model-tier" => self.read_setting(child),
            "person-policy" | "density" => self.read_policy_or_density(child),
            "identity" => self.read_identity(child),
            "boundary-omit" => self.read_boundary_omit(child),
            "personality-library" => self.read_personality_library(child),
            "source" => self.read_source(child),
            "skill-policy" => self.read_skill_policy(child),
            _ => self.reader.unknown_node(child, "`compose`", &[REQUEST_CHILDREN, &["skill-policy"]].concat()),
        }
    }

    /// The singleton string value of `child`, or `None` when it repeats or is malformed
    /// (each already reported).
    fn singleton_string(&mut self, child: &Node) -> Option<(String, Span)> {
        if !self.reader.singleton(&mut self.seen, child) {
            return None;
        }
        self.reader.allowed_properties(child, &[]);
        self.reader.no_children(child);
        self.reader.single_string(child)
    }

    /// `person-source`, `role`, `delivery` and `model-tier`: one string each.
    fn read_setting(&mut self, child: &Node) {
        let Some((value, span)) = self.singleton_string(child) else { return };
        match child.name.as_str() {
            "person-source" => {
                self.request.person_source =
                    path_value(&mut self.reader, child, value, span, PathRule::PackageOrEmbedded)
            }
            "role" => self.request.role = Some((value, span)),
            "model-tier" => self.request.model_tier = Some((value, span)),
            _ => self.read_delivery(&value, span),
        }
    }

    /// The value of `delivery`, one of the two delivery names.
    fn read_delivery(&mut self, value: &str, span: Span) {
        match value {
            "native-skills" => self.request.delivery = Some(Delivery::NativeSkills),
            "compiled" => self.request.delivery = Some(Delivery::Compiled),
            other => self.reader.report(
                "unknown-delivery",
                span,
                format!("`{}` is not a delivery", sanitize(other)),
                crate::host_config::with_suggestion(
                    other,
                    &["native-skills", "compiled"],
                    "use `native-skills` or `compiled`",
                ),
            ),
        }
    }

    /// `person-policy`, and the removed `density` whose old default is still accepted.
    fn read_policy_or_density(&mut self, child: &Node) {
        let Some((value, span)) = self.singleton_string(child) else { return };
        match (child.name.as_str(), value.as_str()) {
            ("person-policy", "external-only") => {
                self.request.person_policy = PersonPolicy::ExternalOnly;
                self.policy_span = Some(span);
            }
            ("person-policy", "default") => self.request.person_policy = PersonPolicy::Default,
            ("person-policy", other) => self.reader.report(
                "unknown-person-policy",
                span,
                format!("`{}` is not a person policy", sanitize(other)),
                crate::host_config::with_suggestion(
                    other,
                    &["external-only", "default"],
                    "use `external-only` (or `default`, the same as leaving the node out)",
                ),
            ),
            // The Go program removed `density`; it still accepts the old default.
            (_, "full") => {}
            (_, other) => self.reader.report(
                "density-removed",
                span,
                format!("`density \"{}\"` is no longer supported", sanitize(other)),
                "delete the node (only the legacy `density \"full\"` is accepted)",
            ),
        }
    }

    /// `identity name=…`: read and ignored with a warning.
    fn read_identity(&mut self, child: &Node) {
        if !self.reader.singleton(&mut self.seen, child) {
            return;
        }
        self.reader.argument_count(child, 0, Some(0));
        self.reader.allowed_properties(child, &["name"]);
        self.reader.no_children(child);
        if self.reader.required_string_property(child, "name").is_some() {
            warn_unmodelled(
                &mut self.reader,
                child,
                "a request does not rename the role; the identity comes from the person package",
            );
        }
    }

    /// `boundary-omit "<name>" …`: read and ignored with a warning.
    fn read_boundary_omit(&mut self, child: &Node) {
        self.reader.allowed_properties(child, &[]);
        self.reader.no_children(child);
        if self.reader.argument_count(child, 1, None) {
            let _names = self.reader.string_arguments(child);
            warn_unmodelled(&mut self.reader, child, "role boundaries are not modelled, so there is nothing to omit");
        }
    }

    /// `personality-library "<path>"`, which may repeat.
    fn read_personality_library(&mut self, child: &Node) {
        self.reader.allowed_properties(child, &[]);
        self.reader.no_children(child);
        if let Some((value, span)) = self.reader.single_string(child)
            && let Some(path) = path_value(&mut self.reader, child, value, span, PathRule::PackageOrEmbedded)
        {
            self.request.personality_libraries.push(path);
        }
    }

    /// `source "<id>" root=… | declaration=… required=…`.
    fn read_source(&mut self, child: &Node) {
        self.reader.allowed_properties(child, &["root", "declaration", "required"]);
        self.reader.no_children(child);
        let Some((id, span)) = self.reader.single_string(child) else { return };
        if !self.admit_source_id(&id, span) {
            return;
        }
        let required = source_required(&mut self.reader, child);
        if let Some(location) = source_location(&mut self.reader, child, &id, span) {
            self.request.sources.push(RequestSource { id, location, required, span });
        }
    }

    /// Whether a source id is a slug, not the reserved `person`, and not declared before.
    fn admit_source_id(&mut self, id: &str, span: Span) -> bool {
        if !self.reader.slug(id, span, "source id") {
            return false;
        }
        if id == "person" {
            self.reader.report(
                "reserved-source-id",
                span,
                "`person` is the id of the person package",
                "choose another source id",
            );
            return false;
        }
        if self.source_ids.insert(id.to_owned(), span).is_some() {
            self.reader.report(
                "duplicate-source",
                span,
                format!("source `{id}` is declared twice"),
                "give each source a unique id",
            );
            return false;
        }
        true
    }

    /// `skill-policy "<name>"`.
    fn read_skill_policy(&mut self, child: &Node) {
        let Some((value, span)) = self.singleton_string(child) else { return };
        match crate::skill_rules::SkillPolicy::from_name(&value) {
            Some(policy) => self.request.skill_policy = Some(policy),
            None => self.reader.report(
                "unknown-skill-policy",
                span,
                format!("`{}` is not a skill policy", sanitize(&value)),
                crate::host_config::with_suggestion(
                    &value,
                    &["warn", "strict", "skip"],
                    "use `warn`, `strict` or `skip`",
                ),
            ),
        }
    }

    /// External-only means the request never falls back to the embedded roster.
    fn check_external_only(&mut self) {
        if let Some(span) = self.policy_span
            && self.request.person_source.as_deref().is_none_or(|source| source == "roster:core")
        {
            self.reader.report(
                "request-external-only",
                span,
                "`person-policy \"external-only\"` needs an external `person-source`",
                "add `person-source \"<folder>\"` naming a person package, or remove the policy",
            );
        }
    }

    /// A request names its role and its delivery, unless a written one was already reported.
    fn check_role_and_delivery(&mut self, compose: &Node) {
        if self.request.role.is_none() && !self.seen.contains_key("role") {
            self.reader.report(
                "missing-node",
                compose.name_span,
                "the request names no `role`",
                "add `role \"<slug>\"`",
            );
        }
        if self.request.delivery.is_none() && !self.seen.contains_key("delivery") {
            self.reader.report(
                "missing-node",
                compose.name_span,
                "the request names no `delivery`",
                "add `delivery \"native-skills\"` or `delivery \"compiled\"`",
            );
        }
    }
}

/// The `required=` flag of a source: `#false` when left out.
fn source_required(reader: &mut Reader<'_>, child: &Node) -> bool {
    match child.property("required").map(|property| (&property.value, property.span)) {
        None => false,
        Some((Value::Bool(flag), _)) => *flag,
        Some((other, span)) => {
            reader.report(
                "argument-type",
                span,
                format!("`required` expects `#true` or `#false`, found a {}", other.kind_name()),
                "write `required=#true`",
            );
            false
        }
    }
}

/// Where a source's skills come from: exactly one of `root=` and `declaration=`.
fn source_location(reader: &mut Reader<'_>, child: &Node, id: &str, span: Span) -> Option<SourceLocation> {
    let root = reader.optional_string_property(child, "root");
    let declaration = reader.optional_string_property(child, "declaration");
    match (root, declaration) {
        (Some((path, path_span)), None) => {
            path_value(reader, child, path, path_span, PathRule::StaysInside).map(SourceLocation::Root)
        }
        (None, Some((path, path_span))) => {
            path_value(reader, child, path, path_span, PathRule::StaysInside).map(SourceLocation::Declaration)
        }
        _ => {
            reader.report(
                "source-location",
                span,
                format!("source `{id}` needs exactly one of `root=` and `declaration=`"),
                "write `source \"<id>\" root=\"<folder>\"` or `source \"<id>\" declaration=\"<file>.kdl\"`",
            );
            None
        }
    }
}

/// One entry of a declaration file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DeclaredEntry {
    pub id: String,
    pub path: String,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Declaration {
    pub instructions: Vec<DeclaredEntry>,
    pub skills: Vec<DeclaredEntry>,
}

/// Parses a source declaration file: `source "<id>" { instruction "<id>" path="…";
/// skill "<id>" path="…" }`. Its id must equal the request's id.
pub fn parse_declaration(text: &str, path: &str, expected_id: &str) -> Parsed<Declaration> {
    let parsed = parse_bounded(text, path);
    let mut diagnostics = parsed.diagnostics;
    let mut declaration = Declaration::default();
    if !diagnostics.is_empty() {
        return Parsed::new(declaration, diagnostics);
    }
    let mut reader = Reader::new(path);
    let mut found = false;
    for node in &parsed.value.nodes {
        if node.name != "source" {
            reader.unknown_node(node, "a declaration", &["source"]);
            continue;
        }
        if found {
            reader.report("duplicate-node", node.name_span, "a declaration holds one `source`", "merge them");
            continue;
        }
        found = true;
        reader.allowed_properties(node, &[]);
        if let Some((id, span)) = reader.single_string(node)
            && id != expected_id
        {
            reader.report(
                "declaration-id-mismatch",
                span,
                format!("the declaration is for source `{}`, the request names `{expected_id}`", sanitize(&id)),
                format!("write `source \"{expected_id}\"`"),
            );
        }
        let mut ids: BTreeMap<String, Span> = BTreeMap::new();
        for child in &node.children {
            if child.name != "instruction" && child.name != "skill" {
                reader.unknown_node(child, "a declared `source`", &["instruction", "skill"]);
                continue;
            }
            reader.allowed_properties(child, &["path"]);
            reader.no_children(child);
            let Some((id, span)) = reader.single_string(child) else { continue };
            if !reader.slug(&id, span, &format!("{} id", child.name)) {
                continue;
            }
            if ids.insert(format!("{}:{id}", child.name), span).is_some() {
                reader.report("duplicate-node", span, format!("{} `{id}` is declared twice", child.name), "keep one");
                continue;
            }
            let Some((entry_path, path_span)) = reader.required_string_property(child, "path") else { continue };
            let Some(entry_path) = path_value(&mut reader, child, entry_path, path_span, PathRule::StaysInside) else {
                continue;
            };
            let entry = DeclaredEntry { id, path: entry_path, span: path_span };
            if child.name == "instruction" {
                declaration.instructions.push(entry);
            } else {
                declaration.skills.push(entry);
            }
        }
    }
    if !found && reader.diagnostics.is_empty() {
        reader.report("missing-node", Span::new(0, 0), "the declaration has no `source` block", "add one");
    }
    diagnostics.append(&mut reader.diagnostics);
    Parsed::new(declaration, diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_full_request() {
        let parsed = parse_request(
            "compose {\n  person-source \"person\"\n  personality-library \"lib\"\n  role \"platform\"\n  delivery \"compiled\"\n  model-tier \"commodity\"\n  source \"k\" root=\"knowledge\" required=#true\n  source \"p\" declaration=\"p.kdl\"\n}\n",
            "request.kdl",
        );
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let request = parsed.value;
        assert_eq!(request.delivery, Some(Delivery::Compiled));
        assert_eq!(request.sources.len(), 2);
        assert!(request.sources[0].required);
        assert_eq!(request.sources[1].location, SourceLocation::Declaration("p.kdl".to_owned()));
    }

    #[test]
    fn refuses_escaping_and_absolute_paths() {
        for bad in ["../outside", "a/../../b", "/etc", "C:\\x"] {
            let text = format!(
                "compose {{ role \"r\"; delivery \"compiled\"; source \"s\" root=\"{}\" }}",
                bad.replace('\\', "\\\\")
            );
            let codes: Vec<_> = parse_request(&text, "r.kdl").diagnostics.iter().map(|d| d.code).collect();
            assert_eq!(codes, ["request-path"], "{bad}");
        }
    }

    fn codes(text: &str) -> Vec<&'static str> {
        parse_request(text, "r.kdl").diagnostics.iter().map(|diagnostic| diagnostic.code).collect()
    }

    #[test]
    fn external_only_needs_an_external_person_source() {
        let with_source = parse_request(
            "compose { person-source \"me\"; person-policy \"external-only\"; role \"r\"; delivery \"compiled\" }",
            "r.kdl",
        );
        assert!(with_source.diagnostics.is_empty(), "{:?}", with_source.diagnostics);
        assert_eq!(with_source.value.person_policy, PersonPolicy::ExternalOnly);
        assert_eq!(
            codes("compose { person-policy \"external-only\"; role \"r\"; delivery \"compiled\" }"),
            ["request-external-only"]
        );
        assert_eq!(
            codes(
                "compose { person-source \"roster:core\"; person-policy \"external-only\"; role \"r\"; delivery \"compiled\" }"
            ),
            ["request-external-only"]
        );
        assert_eq!(
            codes("compose { person-policy \"sometimes\"; role \"r\"; delivery \"compiled\" }"),
            ["unknown-person-policy"]
        );
    }

    #[test]
    fn legacy_and_unmodelled_nodes_are_read() {
        assert!(codes("compose { density \"full\"; role \"r\"; delivery \"compiled\" }").is_empty());
        assert_eq!(codes("compose { density \"lean\"; role \"r\"; delivery \"compiled\" }"), ["density-removed"]);
        let parsed = parse_request(
            "compose { identity name=\"guide\"; boundary-omit \"a\" \"b\"; role \"r\"; delivery \"compiled\" }",
            "r.kdl",
        );
        assert!(!parsed.has_errors(), "{:?}", parsed.diagnostics);
        let warnings: Vec<_> = parsed.diagnostics.iter().map(|diagnostic| diagnostic.code).collect();
        assert_eq!(warnings, ["request-node-ignored", "request-node-ignored"]);
        assert_eq!(codes("compose { boundary-omit; role \"r\"; delivery \"compiled\" }"), ["argument-count"]);
        assert_eq!(codes("compose { identity; role \"r\"; delivery \"compiled\" }"), ["missing-property"]);
    }

    #[test]
    fn reads_the_skill_policy() {
        let parsed = parse_request("compose { role \"r\"; delivery \"compiled\"; skill-policy \"skip\" }", "r.kdl");
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        assert_eq!(parsed.value.skill_policy, Some(crate::skill_rules::SkillPolicy::Skip));
        let codes: Vec<_> =
            parse_request("compose { role \"r\"; delivery \"compiled\"; skill-policy \"lax\" }", "r.kdl")
                .diagnostics
                .iter()
                .map(|d| d.code)
                .collect();
        assert_eq!(codes, ["unknown-skill-policy"]);
    }

    #[test]
    fn needs_role_and_delivery() {
        let codes: Vec<_> = parse_request("compose {}", "r.kdl").diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["missing-node", "missing-node"]);
    }
}
