//! Diagnostics as a SARIF 2.1.0 log (`catalog check|audit --format sarif`), the format
//! code-scanning tools read: one run of the tool `acompose`, a rule per diagnostic code,
//! a result per diagnostic with its file, line and column. Carries the messages the
//! terminal shows, so nothing hidden or secret is in it either.

use std::collections::BTreeMap;

use acompose_driver::engine::Diagnostic;
use acompose_driver::engine::Severity;
use acompose_driver::engine::diagnostic::LineIndex;
use serde::Serialize;

/// Where the 2.1.0 schema is published (OASIS, errata 01).
const SCHEMA: &str = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

#[derive(Serialize)]
struct Log<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: Vec<Run<'a>>,
}

#[derive(Serialize)]
struct Run<'a> {
    tool: Tool,
    results: Vec<SarifResult<'a>>,
}

#[derive(Serialize)]
struct Tool {
    driver: ToolComponent,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolComponent {
    name: &'static str,
    semantic_version: &'static str,
    rules: Vec<Rule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: &'static str,
    short_description: Text,
}

#[derive(Serialize)]
struct Text {
    text: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'a> {
    rule_id: &'a str,
    rule_index: usize,
    level: &'static str,
    message: Text,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    locations: Vec<Location>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    physical_location: PhysicalLocation,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<Region>,
}

#[derive(Serialize)]
struct ArtifactLocation {
    uri: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: usize,
    start_column: usize,
}

/// A path as a relative URI reference: every byte outside the unreserved set and `/`
/// percent-encoded.
fn uri_of(path: &str) -> String {
    let mut uri = String::new();
    for byte in path.trim_start_matches("./").bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note | Severity::Detail => "note",
    }
}

/// The SARIF log of `diagnostics`; `text_of` gives a file's text by its path as shown,
/// to place a diagnostic that has a span.
pub fn log(diagnostics: &[Diagnostic], text_of: &dyn Fn(&str) -> Option<String>) -> Vec<u8> {
    let mut rules: BTreeMap<&'static str, usize> = BTreeMap::new();
    for diagnostic in diagnostics {
        let next = rules.len();
        rules.entry(diagnostic.code).or_insert(next);
    }
    let mut texts: BTreeMap<&str, Option<(String, LineIndex)>> = BTreeMap::new();
    let results = diagnostics
        .iter()
        .map(|diagnostic| {
            let place = match (diagnostic.file.as_deref(), diagnostic.span, diagnostic.position) {
                (_, _, Some(position)) => Some((position.line, position.column)),
                (Some(file), Some(span), None) => texts
                    .entry(file)
                    .or_insert_with(|| text_of(file).map(|text| (text.clone(), LineIndex::new(&text))))
                    .as_ref()
                    .map(|(text, lines)| lines.line_column(text, span.offset)),
                _ => None,
            };
            let locations = diagnostic
                .file
                .as_deref()
                .map(|file| Location {
                    physical_location: PhysicalLocation {
                        artifact_location: ArtifactLocation { uri: uri_of(file) },
                        region: place.map(|(line, column)| Region { start_line: line, start_column: column }),
                    },
                })
                .into_iter()
                .collect();
            SarifResult {
                rule_id: diagnostic.code,
                rule_index: rules[diagnostic.code],
                level: level(diagnostic.severity),
                message: Text { text: diagnostic.message.clone() },
                locations,
            }
        })
        .collect();
    let mut rule_list: Vec<(&'static str, usize)> = rules.into_iter().collect();
    rule_list.sort_by_key(|(_, index)| *index);
    let log = Log {
        schema: SCHEMA,
        version: "2.1.0",
        runs: vec![Run {
            tool: Tool {
                driver: ToolComponent {
                    name: "acompose",
                    semantic_version: env!("CARGO_PKG_VERSION"),
                    rules: rule_list
                        .into_iter()
                        .map(|(id, _)| Rule { id, short_description: Text { text: id.replace('-', " ") } })
                        .collect(),
                },
            },
            results,
        }],
    };
    acompose_driver::engine::snapshot::to_json_bytes(&log)
}
