//! Host convergence, the engine half: the host configuration (`agent-compose.yaml`) and
//! the roster artifact's files. Owns what to write; never writes (the cli's transaction
//! layer does), never decides where home is.

use crate::OutputFile;
use crate::diagnostic::{Diagnostic, Parsed, Span, sanitize};
use crate::person::PersonModel;
use crate::person::validate::person_model;
use crate::yaml::{self, Yaml};
use crate::{PersonSource, render, snapshot};

/// The name of the host configuration file inside home.
pub const CONFIG_FILE: &str = "agent-compose.yaml";

/// Whether an embedded fallback is allowed when no person source is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
}

const KNOWN_KEYS: [&str; 4] = ["person_source", "person_policy", "personality_libraries", "operating_context"];

fn scalar(value: &Yaml, key: &str, path: &str, diagnostics: &mut Vec<Diagnostic>) -> Option<(String, Span)> {
    match value {
        Yaml::Scalar { text, span, .. } if !text.trim().is_empty() => Some((text.clone(), *span)),
        other => {
            diagnostics.push(
                Diagnostic::error(
                    "config-type",
                    format!("`{key}` expects a non-empty string, found {}", other.kind_name()),
                )
                .in_file(path)
                .at(Some(other.span()))
                .hint(format!("write `{key}: <value>`")),
            );
            None
        }
    }
}

fn list(value: &Yaml, key: &str, path: &str, diagnostics: &mut Vec<Diagnostic>) -> Vec<(String, Span)> {
    match value {
        Yaml::Sequence { items, .. } => items.iter().filter_map(|item| scalar(item, key, path, diagnostics)).collect(),
        other => {
            diagnostics.push(
                Diagnostic::error("config-type", format!("`{key}` expects a list, found {}", other.kind_name()))
                    .in_file(path)
                    .at(Some(other.span()))
                    .hint(format!("write `{key}:` followed by `  - <value>` lines")),
            );
            Vec::new()
        }
    }
}

/// Parses the host configuration strictly: unknown keys, wrong types, duplicate keys and
/// YAML features that hide values are errors with their line.
pub fn parse_host_config(text: &str, path: &str) -> Parsed<HostConfig> {
    let parsed = yaml::parse(text, path);
    let mut diagnostics = parsed.diagnostics;
    let mut config = HostConfig::default();
    let entries = match parsed.value {
        Yaml::Empty => return Parsed::new(config, diagnostics),
        Yaml::Mapping { entries, .. } => entries,
        other => {
            diagnostics.push(
                Diagnostic::error(
                    "config-type",
                    format!("the configuration must be a mapping, found {}", other.kind_name()),
                )
                .in_file(path)
                .at(Some(other.span()))
                .hint("write `key: value` lines"),
            );
            return Parsed::new(config, diagnostics);
        }
    };
    for (key, key_span, value) in &entries {
        match key.as_str() {
            "person_source" => config.person_source = scalar(value, key, path, &mut diagnostics),
            "person_policy" => match scalar(value, key, path, &mut diagnostics) {
                Some((policy, _)) if policy == "external-only" => config.person_policy = PersonPolicy::ExternalOnly,
                Some((policy, _)) if policy == "default" => config.person_policy = PersonPolicy::Default,
                Some((policy, span)) => diagnostics.push(
                    Diagnostic::error("config-value", format!("unknown person policy `{}`", sanitize(&policy)))
                        .in_file(path)
                        .at(Some(span))
                        .hint("use `external-only` or `default`"),
                ),
                None => {}
            },
            "personality_libraries" => config.personality_libraries = list(value, key, path, &mut diagnostics),
            "operating_context" => {
                config.operating_context = list(value, key, path, &mut diagnostics);
                for (repository, span) in &config.operating_context {
                    if !is_repository_path(repository) {
                        diagnostics.push(
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
            _ => diagnostics.push(
                Diagnostic::error("config-unknown-key", format!("unknown key `{}`", sanitize(key)))
                    .in_file(path)
                    .at(Some(*key_span))
                    .hint(format!("known keys: {}", KNOWN_KEYS.join(", "))),
            ),
        }
    }
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
