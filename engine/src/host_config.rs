//! The host configuration (`agent-compose.yaml` in home): its keys read with the strict
//! YAML reader, and `acompose setup`'s edit of it. Owns what the file means; never reads
//! or writes it (the driver does), never decides where home is.

// The strict YAML reader shared with People: size, depth and value limits, no duplicate
// keys, anchors, aliases, tags or non-finite numbers.
use crate::diagnostic::{Diagnostic, Parsed, Span, sanitize};
use crate::strict::tree::{Position, Tree, push_token};
use crate::strict::yaml as strict_yaml;

/// The name of the host configuration file inside home.
pub const CONFIG_FILE: &str = "agent-compose.yaml";

/// Whether an embedded fallback is allowed when no person source is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PersonPolicy {
    /// Use `person_source` when set, else the embedded `roster:core`.
    #[default]
    Default,
    /// A configured external person source is required; the embedded default is refused.
    ExternalOnly,
}

/// `<home>/agent-compose.yaml`, as written (paths unresolved).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostConfig {
    pub person_source: Option<(String, Span)>,
    pub person_policy: PersonPolicy,
    /// Where `person_policy` was written.
    pub person_policy_span: Option<Span>,
    pub personality_libraries: Vec<(String, Span)>,
    /// `projects_root`: the folder `owner/repo` paths resolve under, as written (an
    /// absolute path, `~/…`, or a path relative to home).
    pub projects_root: Option<(String, Span)>,
    /// `owner/repo` repositories under the projects root.
    pub operating_context: Vec<(String, Span)>,
    /// `skill_policy`: what Agent Skills findings do to every composition of the host.
    pub skill_policy: crate::skill_rules::SkillPolicy,
    /// Where `skill_policy` was written.
    pub skill_policy_span: Option<Span>,
    /// `load_points`: where each harness's user instructions file is; `None` when the key
    /// is absent (no harness folder is touched).
    pub load_points: Option<Vec<LoadPoint>>,
    /// `skill_load_points`: where each harness's user skills folder is.
    pub skill_load_points: Option<Vec<LoadPoint>>,
    /// `overlays`: the private overlay files, in order (absolute, `~/…` or relative to
    /// home); empty when the key is absent (then home's `overlays/*.kdl` are read).
    pub overlays: Vec<(String, Span)>,
    /// `audit_policy`: what each kind of the content audit's findings does
    /// (`crate::audit`); kinds not written keep their default.
    pub audit_policy: crate::audit::AuditPolicy,
    /// `bundle_signers`: an allowed-signers file (git's format); when set, a pulled
    /// bundle must carry a signature by one of them to be pulled, launched or projected.
    pub bundle_signers: Option<(String, Span)>,
    /// `bundle_history`: how many earlier bundles convergence keeps per role (`ROLE@{1}`
    /// …); `None` when the key is absent ([`DEFAULT_BUNDLE_HISTORY`]).
    pub bundle_history: Option<usize>,
    /// Where `bundle_history` was written.
    pub bundle_history_span: Option<Span>,
}

/// How many earlier bundles convergence keeps per role when `bundle_history` is absent.
pub const DEFAULT_BUNDLE_HISTORY: usize = 3;
/// The most earlier bundles `bundle_history` may keep per role.
pub const MAX_BUNDLE_HISTORY: usize = 50;

impl HostConfig {
    /// How many earlier bundles convergence keeps per role.
    pub fn bundle_history(&self) -> usize {
        self.bundle_history.unwrap_or(DEFAULT_BUNDLE_HISTORY)
    }
}

/// Where one harness's delivery goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// `true`: the harness's own place at home scope (the layout table).
    Default,
    /// An absolute path or `~/…`, as written; the host expands `~`.
    Path(String),
    /// `null` or `false`: this harness is opted out.
    Off,
}

/// One entry of `load_points` or `skill_load_points`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadPoint {
    pub harness: String,
    pub destination: Destination,
    pub span: Span,
}

/// Every key the host configuration knows, in the order the documentation lists them.
pub const KNOWN_KEYS: [&str; 12] = [
    "person_source",
    "person_policy",
    "personality_libraries",
    "projects_root",
    "operating_context",
    "skill_policy",
    "load_points",
    "skill_load_points",
    "overlays",
    "audit_policy",
    "bundle_signers",
    "bundle_history",
];

/// The byte offset of a 1-based line and column (columns count characters).
fn offset_at(text: &str, position: Position) -> usize {
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if index + 1 == position.line {
            let column: usize = line.chars().take(position.column.saturating_sub(1)).map(char::len_utf8).sum();
            return offset + column;
        }
        offset += line.len();
    }
    text.len()
}

/// Reads values out of the parsed configuration with spans for diagnostics.
struct Reader<'a> {
    text: &'a str,
    path: &'a str,
    tree: &'a Tree,
    diagnostics: Vec<Diagnostic>,
}

fn kind_name(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "nothing",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a mapping",
    }
}

impl Reader<'_> {
    fn error(&mut self, code: &'static str, message: String, span: Span, hint: String) {
        self.diagnostics.push(Diagnostic::error(code, message).in_file(self.path).at(Some(span)).hint(hint));
    }

    /// `harness: path` pairs; a harness must be in the layout table, a path absolute or
    /// `~/…`, and `null`/`false` opts the harness out.
    fn load_points(&mut self, value: &serde_json::Value, pointer: &str, key: &str) -> Vec<LoadPoint> {
        let entries = match value {
            serde_json::Value::Null => return Vec::new(),
            serde_json::Value::Object(entries) => entries,
            other => {
                let span = self.span(pointer, 1);
                let message = format!("`{key}` expects a mapping of harness to path, found {}", kind_name(other));
                self.error("config-type", message, span, format!("write `{key}:` followed by `  claude: ~/…` lines"));
                return Vec::new();
            }
        };
        let mut points = Vec::new();
        for (harness, destination) in entries {
            let mut child = pointer.to_owned();
            push_token(&mut child, harness);
            let span = self.span(&child, 1);
            if crate::harness_layout::layout(harness).is_none() {
                let span = self.key_span(&child, harness);
                let message = format!("`{}` is not a known harness", sanitize(harness));
                let names = crate::harness_layout::harness_names();
                let known = format!("known harnesses: {}", names.join(", "));
                let hint = match crate::suggest::did_you_mean(harness, names.iter().copied()) {
                    Some(suggestion) => format!("{suggestion} {known}"),
                    None => known,
                };
                self.error("config-unknown-harness", message, span, hint);
                continue;
            }
            let destination = match destination {
                serde_json::Value::Null | serde_json::Value::Bool(false) => Destination::Off,
                serde_json::Value::Bool(true) => Destination::Default,
                serde_json::Value::String(text) if text.starts_with('/') || text.starts_with("~/") => {
                    Destination::Path(text.clone())
                }
                other => {
                    let message = format!(
                        "`{key}.{}` expects an absolute path, `~/…`, `true` or `null`, found {}",
                        sanitize(harness),
                        kind_name(other)
                    );
                    self.error(
                        "config-value",
                        message,
                        span,
                        "write an absolute path or one starting with `~/`".to_owned(),
                    );
                    continue;
                }
            };
            points.push(LoadPoint { harness: harness.clone(), destination, span });
        }
        points
    }

    fn span(&self, pointer: &str, length: usize) -> Span {
        let offset = self.tree.position(pointer).map_or(0, |position| offset_at(self.text, position));
        Span::new(offset, length.max(1))
    }

    fn key_span(&self, pointer: &str, key: &str) -> Span {
        let offset = self.tree.key_position(pointer).map_or(0, |position| offset_at(self.text, position));
        Span::new(offset, key.len().max(1))
    }

    fn scalar(&mut self, value: &serde_json::Value, pointer: &str, key: &str) -> Option<(String, Span)> {
        match value {
            serde_json::Value::String(text) if !text.trim().is_empty() => {
                Some((text.clone(), self.span(pointer, text.len())))
            }
            other => {
                let span = self.span(pointer, 1);
                self.diagnostics.push(
                    Diagnostic::error(
                        "config-type",
                        format!("`{key}` expects a non-empty string, found {}", kind_name(other)),
                    )
                    .in_file(self.path)
                    .at(Some(span))
                    .hint(format!("write `{key}: <value>`")),
                );
                None
            }
        }
    }

    /// A whole number from 0 to `most`.
    fn count(&mut self, value: &serde_json::Value, pointer: &str, key: &str, most: usize) -> Option<usize> {
        let number = value.as_u64().and_then(|number| usize::try_from(number).ok()).filter(|number| *number <= most);
        if number.is_none() {
            let span = self.span(pointer, 1);
            self.error(
                "config-value",
                format!("`{key}` expects a whole number from 0 to {most}, found {}", kind_name(value)),
                span,
                format!("write `{key}: 3`, or `{key}: 0` to keep no earlier bundles"),
            );
        }
        number
    }

    fn list(&mut self, value: &serde_json::Value, pointer: &str, key: &str) -> Vec<(String, Span)> {
        match value {
            serde_json::Value::Array(items) => items
                .iter()
                .enumerate()
                .filter_map(|(index, item)| self.scalar(item, &format!("{pointer}/{index}"), key))
                .collect(),
            other => {
                let span = self.span(pointer, 1);
                self.diagnostics.push(
                    Diagnostic::error("config-type", format!("`{key}` expects a list, found {}", kind_name(other)))
                        .in_file(self.path)
                        .at(Some(span))
                        .hint(format!("write `{key}:` followed by `  - <value>` lines")),
                );
                Vec::new()
            }
        }
    }
}

/// Parses the host configuration strictly: unknown keys, wrong types, duplicate keys and
/// YAML features that hide values are errors with their line.
pub fn parse_host_config(text: &str, path: &str) -> Parsed<HostConfig> {
    let mut config = HostConfig::default();
    let tree = match strict_yaml::parse(text.as_bytes()) {
        Ok(tree) => tree,
        Err(error) => {
            let span = error.position.map_or(Span::new(0, 0), |position| Span::new(offset_at(text, position), 0));
            let diagnostic = Diagnostic::error(error.code, format!("invalid YAML: {}", error.message))
                .in_file(path)
                .at(Some(span))
                .hint("write plain `key: value` lines and `  - item` lists");
            return Parsed::new(config, vec![diagnostic]);
        }
    };
    let mut reader = Reader { text, path, tree: &tree, diagnostics: Vec::new() };
    let entries = match &tree.value {
        serde_json::Value::Null => return Parsed::new(config, Vec::new()),
        serde_json::Value::Object(entries) => entries,
        other => {
            let span = reader.span("", 1);
            reader.diagnostics.push(
                Diagnostic::error(
                    "config-type",
                    format!("the configuration must be a mapping, found {}", kind_name(other)),
                )
                .in_file(path)
                .at(Some(span))
                .hint("write `key: value` lines"),
            );
            return Parsed::new(config, reader.diagnostics);
        }
    };
    for (key, value) in entries {
        reader.read_key(&mut config, key, value);
    }
    let diagnostics = reader.diagnostics;
    Parsed::new(config, diagnostics)
}

impl Reader<'_> {
    /// Reads one top-level key into `config`, or reports it as unknown.
    fn read_key(&mut self, config: &mut HostConfig, key: &str, value: &serde_json::Value) {
        let mut pointer = String::new();
        push_token(&mut pointer, key);
        match key {
            "person_source" => config.person_source = self.scalar(value, &pointer, key),
            "person_policy" => self.read_person_policy(config, value, &pointer, key),
            "personality_libraries" => config.personality_libraries = self.list(value, &pointer, key),
            "projects_root" => config.projects_root = self.scalar(value, &pointer, key),
            "load_points" => config.load_points = Some(self.load_points(value, &pointer, key)),
            "skill_load_points" => config.skill_load_points = Some(self.load_points(value, &pointer, key)),
            "skill_policy" => self.read_skill_policy(config, value, &pointer, key),
            "operating_context" => self.read_operating_context(config, value, &pointer, key),
            "overlays" => config.overlays = self.list(value, &pointer, key),
            "audit_policy" => self.read_audit_policy(config, value, &pointer, key),
            "bundle_signers" => config.bundle_signers = self.scalar(value, &pointer, key),
            "bundle_history" => {
                config.bundle_history = self.count(value, &pointer, key, MAX_BUNDLE_HISTORY);
                config.bundle_history_span = Some(self.span(&pointer, 1));
            }
            _ => {
                let key_span = self.key_span(&pointer, key);
                let mut diagnostic =
                    Diagnostic::error("config-unknown-key", format!("unknown key `{}`", sanitize(key)))
                        .in_file(self.path)
                        .at(Some(key_span));
                if let Some(suggestion) = crate::suggest::did_you_mean(key, KNOWN_KEYS) {
                    diagnostic = diagnostic.hint(suggestion);
                }
                self.diagnostics.push(diagnostic.hint(format!("known keys: {}", KNOWN_KEYS.join(", "))));
            }
        }
    }

    /// `person_policy`: `external-only` or `default`.
    fn read_person_policy(&mut self, config: &mut HostConfig, value: &serde_json::Value, pointer: &str, key: &str) {
        match self.scalar(value, pointer, key) {
            Some((policy, span)) if policy == "external-only" => {
                config.person_policy = PersonPolicy::ExternalOnly;
                config.person_policy_span = Some(span);
            }
            Some((policy, span)) if policy == "default" => {
                config.person_policy = PersonPolicy::Default;
                config.person_policy_span = Some(span);
            }
            Some((policy, span)) => self.diagnostics.push(
                Diagnostic::error("config-value", format!("unknown person policy `{}`", sanitize(&policy)))
                    .in_file(self.path)
                    .at(Some(span))
                    .hint(with_suggestion(&policy, &["external-only", "default"], "use `external-only` or `default`")),
            ),
            None => {}
        }
    }

    /// `skill_policy`: one of the Agent Skills policies.
    fn read_skill_policy(&mut self, config: &mut HostConfig, value: &serde_json::Value, pointer: &str, key: &str) {
        let Some((policy, span)) = self.scalar(value, pointer, key) else {
            return;
        };
        match crate::skill_rules::SkillPolicy::from_name(&policy) {
            Some(policy) => {
                config.skill_policy = policy;
                config.skill_policy_span = Some(span);
            }
            None => self.diagnostics.push(
                Diagnostic::error("config-value", format!("unknown skill policy `{}`", sanitize(&policy)))
                    .in_file(self.path)
                    .at(Some(span))
                    .hint(with_suggestion(&policy, &["warn", "strict", "skip"], "use `warn`, `strict` or `skip`")),
            ),
        }
    }

    /// `audit_policy`: a mapping of audit kind to `refuse` or `warn`.
    fn read_audit_policy(&mut self, config: &mut HostConfig, value: &serde_json::Value, pointer: &str, key: &str) {
        use crate::audit::{AuditAction, AuditKind};
        let serde_json::Value::Object(entries) = value else {
            let span = self.span(pointer, 1);
            let message =
                format!("`{key}` expects a mapping of audit kind to `refuse` or `warn`, found {}", kind_name(value));
            self.error("config-type", message, span, format!("write `{key}:` followed by `  secrets: refuse` lines"));
            return;
        };
        let kinds: Vec<&str> = AuditKind::ALL.iter().map(|kind| kind.name()).collect();
        for (name, action) in entries {
            let mut child = pointer.to_owned();
            push_token(&mut child, name);
            let Some(kind) = AuditKind::from_name(name) else {
                let span = self.key_span(&child, name);
                let hint = with_suggestion(name, &kinds, &format!("audit kinds: {}", kinds.join(", ")));
                self.error("config-value", format!("`{}` is not an audit kind", sanitize(name)), span, hint);
                continue;
            };
            match self.scalar(action, &child, key).map(|(text, span)| (AuditAction::from_name(&text), text, span)) {
                Some((Some(action), _, _)) => config.audit_policy.set(kind, action),
                Some((None, text, span)) => {
                    let message = format!("unknown audit action `{}`", sanitize(&text));
                    let hint = with_suggestion(&text, &["refuse", "warn"], "use `refuse` or `warn`");
                    self.error("config-value", message, span, hint);
                }
                None => {}
            }
        }
    }

    /// `operating_context`: a list of `owner/repo` paths.
    fn read_operating_context(&mut self, config: &mut HostConfig, value: &serde_json::Value, pointer: &str, key: &str) {
        config.operating_context = self.list(value, pointer, key);
        for (repository, span) in &config.operating_context {
            if !is_repository_path(repository) {
                self.diagnostics.push(
                    Diagnostic::error(
                        "config-value",
                        format!("`{}` is not an `owner/repo` path", sanitize(repository)),
                    )
                    .in_file(self.path)
                    .at(Some(*span))
                    .hint("write repositories as `owner/repo`, relative to the projects root"),
                );
            }
        }
    }
}

/// `hint`, after "did you mean" when `written` is close to one of `known`.
pub(crate) fn with_suggestion(written: &str, known: &[&str], hint: &str) -> String {
    match crate::suggest::did_you_mean(written, known.iter().copied()) {
        Some(suggestion) => format!("{suggestion} {hint}"),
        None => hint.to_owned(),
    }
}

/// `owner/repo`: two non-empty segments of `[A-Za-z0-9._-]`, neither `.` nor `..`.
pub(crate) fn is_repository_path(text: &str) -> bool {
    let segments: Vec<&str> = text.split('/').collect();
    segments.len() == 2
        && segments.iter().all(|segment| {
            !segment.is_empty()
                && *segment != "."
                && *segment != ".."
                && segment.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
        })
}

/// The one refusal of every command that loads a roster when the configuration says
/// `person_policy: external-only` and nothing (neither `person_source` nor a flag) selects
/// an external person source. `path` is the configuration as shown; `span` is where the
/// policy was written.
pub fn external_only_refusal(path: &str, span: Option<Span>) -> Diagnostic {
    Diagnostic::error(
        "config-external-only",
        "`person_policy: external-only` refuses the embedded `roster:core`, and no external person source is selected",
    )
    .in_file(path)
    .at(span.or(Some(Span::new(0, 0))))
    .hint("set `person_source: <folder>` in the configuration, or pass `--person-source DIR`")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::line_column;

    fn codes(text: &str) -> Vec<&'static str> {
        parse_host_config(text, "c.yaml").diagnostics.iter().map(|diagnostic| diagnostic.code).collect()
    }

    #[test]
    fn reads_every_key() {
        let parsed = parse_host_config(
            "person_source: ../me\nperson_policy: external-only\npersonality_libraries:\n  - ../lib\noperating_context:\n  - acme/root\n",
            "c.yaml",
        );
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        assert_eq!(parsed.value.person_policy, PersonPolicy::ExternalOnly);
        assert_eq!(parsed.value.operating_context[0].0, "acme/root");
        let parsed = parse_host_config("projects_root: ~/src\n", "c.yaml");
        assert_eq!(parsed.value.projects_root.map(|(root, _)| root).as_deref(), Some("~/src"));
        assert!(parse_host_config("", "c.yaml").diagnostics.is_empty());
    }

    #[test]
    fn reads_the_bundle_history() {
        assert_eq!(parse_host_config("", "c.yaml").value.bundle_history(), DEFAULT_BUNDLE_HISTORY);
        let parsed = parse_host_config("bundle_history: 0\n", "c.yaml");
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        assert_eq!(parsed.value.bundle_history(), 0);
        assert_eq!(parse_host_config("bundle_history: 7\n", "c.yaml").value.bundle_history, Some(7));
        assert_eq!(codes("bundle_history: -1\n"), ["config-value"]);
        assert_eq!(codes("bundle_history: 51\n"), ["config-value"]);
        assert_eq!(codes("bundle_history: many\n"), ["config-value"]);
    }

    #[test]
    fn reads_the_skill_policy() {
        let parsed = parse_host_config("skill_policy: strict\n", "c.yaml");
        assert_eq!(parsed.value.skill_policy, crate::skill_rules::SkillPolicy::Strict);
        assert_eq!(codes("skill_policy: loose\n"), ["config-value"]);
    }

    #[test]
    fn reads_the_audit_policy() {
        use crate::audit::{AuditAction, AuditKind};
        let parsed = parse_host_config("audit_policy:\n  secrets: warn\n  zero-width: refuse\n", "c.yaml");
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let policy = parsed.value.audit_policy;
        assert_eq!(policy.action(AuditKind::Secrets), AuditAction::Warn);
        assert_eq!(policy.action(AuditKind::ZeroWidth), AuditAction::Refuse);
        assert_eq!(policy.action(AuditKind::TagCharacters), AuditAction::Refuse);
        assert_eq!(codes("audit_policy:\n  secret: warn\n"), ["config-value"]);
        assert_eq!(codes("audit_policy:\n  secrets: allow\n"), ["config-value"]);
        assert_eq!(codes("audit_policy: refuse\n"), ["config-type"]);
    }

    #[test]
    fn problems_name_their_line() {
        let text = "person_source: roster:core\nmodel: large\n";
        let parsed = parse_host_config(text, "c.yaml");
        assert_eq!(parsed.diagnostics[0].code, "config-unknown-key");
        let span = parsed.diagnostics[0].span.expect("span");
        assert_eq!(line_column(text, span.offset), (2, 1));
        assert_eq!(codes("operating_context:\n  - not-a-repo\n"), ["config-value"]);
        assert_eq!(codes("person_source: [a]\n"), ["config-type"]);
    }

    #[test]
    fn hostile_yaml_is_refused() {
        assert_eq!(codes("a: 1\na: 2\n"), ["duplicate-key"]);
        assert_eq!(codes("a: &x [1]\nb: *x\n"), ["yaml-anchor"]);
        assert_eq!(codes("person_source: .nan\n"), ["non-finite-number"]);
        assert_eq!(codes("person_source: [\n"), ["yaml-syntax"]);
    }
}

/// What `acompose setup HARNESS` did to one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyChange {
    /// The harness was added with its default destination.
    Added(&'static str),
    /// The harness was there already, with a destination: left as written.
    Kept(&'static str),
    /// The harness is opted out (`null`/`false`): left as written.
    OptedOut(&'static str),
}

/// The configuration text with `harness` wired into `load_points` and
/// `skill_load_points` at its home-scope defaults (`~/…`). Existing entries are kept as
/// written; lines are only added. An invalid configuration, or a key written in a form
/// lines cannot be added to, is refused with a message.
pub fn enable_harness(text: &str, harness: &str) -> Result<(String, Vec<KeyChange>), String> {
    let Some(row) = crate::harness_layout::layout(harness) else {
        return Err(format!("`{}` is not a known harness", sanitize(harness)));
    };
    let parsed = parse_host_config(text, CONFIG_FILE);
    if parsed.has_errors() {
        return Err("the configuration is invalid; fix it first (bare `acompose` shows every problem)".to_owned());
    }
    let mut edited = text.to_owned();
    let mut changes = Vec::new();
    let keys: [(&'static str, &Option<Vec<LoadPoint>>, &str); 2] = [
        ("load_points", &parsed.value.load_points, row.home.instructions),
        ("skill_load_points", &parsed.value.skill_load_points, row.home.skills),
    ];
    for (key, points, default) in keys {
        // A harness with no instructions file at home scope gets no load point.
        if default.is_empty() {
            continue;
        }
        let entry = format!("{harness}: ~/{default}");
        match points.as_ref().and_then(|points| points.iter().find(|point| point.harness == harness)) {
            Some(point) if point.destination == Destination::Off => changes.push(KeyChange::OptedOut(key)),
            Some(_) => changes.push(KeyChange::Kept(key)),
            None => {
                edited = add_entry(&edited, key, &entry)?;
                changes.push(KeyChange::Added(key));
            }
        }
    }
    let check = parse_host_config(&edited, CONFIG_FILE);
    if check.has_errors() {
        return Err("the edited configuration would be invalid; add the keys by hand".to_owned());
    }
    Ok((edited, changes))
}

/// Adds `entry` under the top-level `key` (creating the key at the end when absent).
fn add_entry(text: &str, key: &str, entry: &str) -> Result<String, String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let heading =
        lines.iter().position(|line| line.strip_prefix(key).and_then(|rest| rest.strip_prefix(':')).is_some());
    let Some(index) = heading else {
        let mut edited = text.to_owned();
        if !edited.is_empty() && !edited.ends_with('\n') {
            edited.push('\n');
        }
        edited.push_str(&format!("{key}:\n  {entry}\n"));
        return Ok(edited);
    };
    let rest = lines[index][key.len() + 1..].trim();
    let rest = rest.split(" #").next().unwrap_or_default().trim();
    if !matches!(rest, "" | "null" | "~" | "{}") {
        return Err(format!("`{key}` is written on one line; add `{entry}` under it by hand"));
    }
    let indent = lines
        .get(index + 1)
        .map(|line| line.len() - line.trim_start_matches(' ').len())
        .filter(|indent| *indent > 0 && rest.is_empty())
        .unwrap_or(2);
    let mut edited: String = lines[..index].concat();
    edited.push_str(&format!("{key}:\n{}{entry}\n", " ".repeat(indent)));
    for line in &lines[index + 1..] {
        edited.push_str(line);
    }
    Ok(edited)
}

#[cfg(test)]
mod setup_tests {
    use super::*;

    #[test]
    fn setup_adds_both_keys_to_an_empty_configuration() {
        let (text, changes) = enable_harness("", "claude").expect("edited");
        assert_eq!(
            text,
            "load_points:\n  claude: ~/.claude/CLAUDE.md\nskill_load_points:\n  claude: ~/.claude/skills\n"
        );
        assert_eq!(changes, [KeyChange::Added("load_points"), KeyChange::Added("skill_load_points")]);
    }

    #[test]
    fn setup_keeps_what_is_written_and_adds_under_an_existing_key() {
        let text = "skill_policy: warn\nskill_load_points:\n    codex: ~/elsewhere\nload_points:\n  claude: null\n";
        let (edited, changes) = enable_harness(text, "claude").expect("edited");
        assert_eq!(
            edited,
            "skill_policy: warn\nskill_load_points:\n    claude: ~/.claude/skills\n    codex: ~/elsewhere\nload_points:\n  claude: null\n"
        );
        assert_eq!(changes, [KeyChange::OptedOut("load_points"), KeyChange::Added("skill_load_points")]);
    }

    #[test]
    fn setup_refuses_an_invalid_configuration_and_a_one_line_mapping() {
        assert!(enable_harness("nonsense: 1\n", "claude").is_err());
        assert!(enable_harness("load_points: {codex: ~/x}\n", "claude").is_err());
    }
}
