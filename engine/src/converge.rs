//! Host convergence, the engine half: the host configuration (`agent-compose.yaml`) and
//! the roster artifact's files. Owns what to write; never writes (the cli's transaction
//! layer does), never decides where home is.

use crate::OutputFile;
// The strict YAML reader shared with People: size, depth and value limits, no duplicate
// keys, anchors, aliases, tags or non-finite numbers.
use crate::diagnostic::{Diagnostic, Parsed, Span, sanitize};
use crate::people::tree::{Position, Tree, push_token};
use crate::people::yaml as strict_yaml;
use crate::person::PersonModel;
use crate::person::validate::person_model;
use crate::{PersonSource, render, snapshot};

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
    pub personality_libraries: Vec<(String, Span)>,
    /// `owner/repo` repositories under the projects root.
    pub operating_context: Vec<(String, Span)>,
    /// `skill_policy`: what Agent Skills findings do to every composition of the host.
    pub skill_policy: crate::skill_rules::SkillPolicy,
}

const KNOWN_KEYS: [&str; 5] =
    ["person_source", "person_policy", "personality_libraries", "operating_context", "skill_policy"];

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
        let mut pointer = String::new();
        push_token(&mut pointer, key);
        let key_span = reader.key_span(&pointer, key);
        match key.as_str() {
            "person_source" => config.person_source = reader.scalar(value, &pointer, key),
            "person_policy" => match reader.scalar(value, &pointer, key) {
                Some((policy, _)) if policy == "external-only" => config.person_policy = PersonPolicy::ExternalOnly,
                Some((policy, _)) if policy == "default" => config.person_policy = PersonPolicy::Default,
                Some((policy, span)) => reader.diagnostics.push(
                    Diagnostic::error("config-value", format!("unknown person policy `{}`", sanitize(&policy)))
                        .in_file(path)
                        .at(Some(span))
                        .hint("use `external-only` or `default`"),
                ),
                None => {}
            },
            "personality_libraries" => config.personality_libraries = reader.list(value, &pointer, key),
            "skill_policy" => {
                if let Some((policy, span)) = reader.scalar(value, &pointer, key) {
                    match crate::skill_rules::SkillPolicy::from_name(&policy) {
                        Some(policy) => config.skill_policy = policy,
                        None => reader.diagnostics.push(
                            Diagnostic::error("config-value", format!("unknown skill policy `{}`", sanitize(&policy)))
                                .in_file(path)
                                .at(Some(span))
                                .hint("use `warn`, `strict` or `skip`"),
                        ),
                    }
                }
            }
            "operating_context" => {
                config.operating_context = reader.list(value, &pointer, key);
                for (repository, span) in &config.operating_context {
                    if !is_repository_path(repository) {
                        reader.diagnostics.push(
                            Diagnostic::error(
                                "config-value",
                                format!("`{}` is not an `owner/repo` path", sanitize(repository)),
                            )
                            .in_file(path)
                            .at(Some(*span))
                            .hint("write repositories as `owner/repo`, relative to the projects root"),
                        );
                    }
                }
            }
            _ => reader.diagnostics.push(
                Diagnostic::error("config-unknown-key", format!("unknown key `{}`", sanitize(key)))
                    .in_file(path)
                    .at(Some(key_span))
                    .hint(format!("known keys: {}", KNOWN_KEYS.join(", "))),
            ),
        }
    }
    let mut diagnostics = reader.diagnostics;
    if config.person_policy == PersonPolicy::ExternalOnly
        && config.person_source.as_ref().is_none_or(|(source, _)| source == "roster:core")
    {
        diagnostics.push(
            Diagnostic::error(
                "config-external-only",
                "`person_policy: external-only` needs an external `person_source`",
            )
            .in_file(path)
            .at(Some(Span::new(0, 0)))
            .hint("set `person_source` to a person package directory"),
        );
    }
    Parsed::new(config, diagnostics)
}

/// `owner/repo`: two non-empty segments of `[A-Za-z0-9._-]`, neither `.` nor `..`.
pub fn is_repository_path(text: &str) -> bool {
    let segments: Vec<&str> = text.split('/').collect();
    segments.len() == 2
        && segments.iter().all(|segment| {
            !segment.is_empty()
                && *segment != "."
                && *segment != ".."
                && segment.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
        })
}

/// The roster artifact: `person.json`, `ROSTER.md`, `INVARIANT.md` and the skill tree
/// `.agents/skills/<id>/SKILL.md` for every role skill, role method and personality.
/// Files are sorted by path.
pub fn roster_files(model: &PersonModel) -> Vec<OutputFile> {
    let mut files = vec![
        OutputFile { path: "person.json".to_owned(), bytes: snapshot::person_json(model) },
        OutputFile { path: "ROSTER.md".to_owned(), bytes: render::roster_document(model).into_bytes() },
        OutputFile { path: "INVARIANT.md".to_owned(), bytes: model.invariant.clone().into_bytes() },
    ];
    let skill =
        |id: &str, bytes: &[u8]| OutputFile { path: format!(".agents/skills/{id}/SKILL.md"), bytes: bytes.to_vec() };
    for role in &model.roles {
        files.push(skill(&role.skill.id, &role.skill.bytes));
        for method in &role.methods {
            files.push(skill(&method.id, &method.bytes));
        }
    }
    for personality in &model.personalities {
        files.push(skill(&personality.skill.id, &personality.skill.bytes));
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.dedup_by(|a, b| a.path == b.path);
    files
}

/// The roster artifact of a person source, or its diagnostics when it is invalid.
#[salsa::tracked(returns(ref), no_eq)]
pub fn roster_artifact(db: &dyn salsa::Database, source: PersonSource) -> Parsed<Option<Vec<OutputFile>>> {
    let model = person_model(db, source);
    if model.has_errors() {
        return Parsed::new(None, model.diagnostics.clone());
    }
    Parsed::new(Some(roster_files(&model.value)), model.diagnostics.clone())
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
        assert!(parse_host_config("", "c.yaml").diagnostics.is_empty());
    }

    #[test]
    fn reads_the_skill_policy() {
        let parsed = parse_host_config("skill_policy: strict\n", "c.yaml");
        assert_eq!(parsed.value.skill_policy, crate::skill_rules::SkillPolicy::Strict);
        assert_eq!(codes("skill_policy: loose\n"), ["config-value"]);
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
