//! Validation of a whole people workspace from the bytes the driver read: the contract
//! check first, then every Person file, every template and the bindings. One broken file
//! never stops the others (a failed contract check stops everything, by design). It does
//! not read files or decide which symlinks to refuse; the driver passes those findings in.

use crate::finding;
use std::collections::BTreeSet;

use super::contract::{self, ContractFiles};
use super::document::{decode_bindings, decode_person};
use super::model::{Bindings, Person};
use super::schema::{self, Contract};
use super::tree::Tree;
use super::{is_slug, json, yaml};
use crate::Diagnostic;
use crate::finding::has_errors;

pub const PEOPLE_DIRECTORY: &str = "people";
pub const TEMPLATES_DIRECTORY: &str = "templates/people";
pub const BINDINGS_PATH: &str = "people/bindings.yaml";

/// One file of a folder: its name inside the folder and its bytes (at most
/// `MAX_FILE_BYTES + 1` of them; the driver need not read further).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub name: String,
    pub bytes: Vec<u8>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        Self { name: name.into(), bytes: bytes.into() }
    }
}

/// What the driver read from a workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspaceFiles {
    pub contract: ContractFiles,
    /// `people/*.json`, in any order.
    pub people: Vec<SourceFile>,
    /// `people/bindings.yaml`, when present.
    pub bindings: Option<Vec<u8>>,
    /// `templates/people/*.json`, in any order.
    pub templates: Vec<SourceFile>,
    /// What the driver refused to read (symlinks), already as findings.
    pub refused: Vec<Diagnostic>,
}

/// The valid People of a workspace, sorted by id (which is file order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Roster {
    pub people: Vec<Person>,
    pub bindings: Bindings,
    /// How many bindings files were read and valid (0 or 1).
    pub has_bindings: bool,
    /// Valid templates; never counted as configured people.
    pub templates: usize,
}

impl Roster {
    pub fn person(&self, id: &str) -> Option<&Person> {
        self.people.iter().find(|person| person.id == id)
    }

    pub fn active(&self) -> usize {
        self.people.iter().filter(|person| person.is_active()).count()
    }

    pub fn archived(&self) -> usize {
        self.people.len() - self.active()
    }
}

/// A roster with every finding met while building it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Validation {
    pub roster: Roster,
    pub findings: Vec<Diagnostic>,
    /// Whether the contract check stopped validation before any file was evaluated.
    pub stopped_at_contract: bool,
}

impl Validation {
    pub fn has_errors(&self) -> bool {
        has_errors(&self.findings)
    }
}

/// `people validate`: refused symlinks, then the schema mirrors against their lock (a
/// failure stops here, so a tampered schema is never evaluated), then every file.
pub fn validate_workspace(files: &WorkspaceFiles) -> Validation {
    let mut findings = files.refused.clone();
    let contract_findings = contract::verify(&files.contract);
    if has_errors(&contract_findings) {
        findings.extend(contract_findings);
        return Validation { roster: Roster::default(), findings, stopped_at_contract: true };
    }
    findings.extend(contract_findings);
    let mut validation = load_roster(&WorkspaceFiles { refused: Vec::new(), ..files.clone() });
    findings.append(&mut validation.findings);
    validation.findings = findings;
    validation
}

/// Every command but `validate`: the same per-file checks with the contract shipped in
/// the binary, without looking at the workspace's mirrors (which they never evaluate).
pub fn load_roster(files: &WorkspaceFiles) -> Validation {
    let mut findings = files.refused.clone();
    let mut people_files: Vec<&SourceFile> = files.people.iter().collect();
    people_files.sort_by(|left, right| left.name.cmp(&right.name));
    let mut people = Vec::new();
    let mut present = BTreeSet::new();
    for file in people_files {
        if let Some(stem) = slug_stem(&file.name) {
            present.insert(stem.to_owned());
        }
        match check_person(PEOPLE_DIRECTORY, &file.name, &file.bytes) {
            Ok(person) => people.push(person),
            Err(mut file_findings) => findings.append(&mut file_findings),
        }
    }
    let mut templates = 0;
    let mut template_files: Vec<&SourceFile> = files.templates.iter().collect();
    template_files.sort_by(|left, right| left.name.cmp(&right.name));
    for file in template_files {
        match check_person(TEMPLATES_DIRECTORY, &file.name, &file.bytes) {
            Ok(_) => templates += 1,
            Err(mut file_findings) => findings.append(&mut file_findings),
        }
    }
    let mut bindings = Bindings::default();
    let mut has_bindings = false;
    if let Some(bytes) = &files.bindings {
        let (valid, mut file_findings) = check_bindings(bytes, &present);
        if let Some(valid) = valid {
            bindings = valid;
            has_bindings = true;
        }
        findings.append(&mut file_findings);
    }
    Validation { roster: Roster { people, bindings, has_bindings, templates }, findings, stopped_at_contract: false }
}

/// A warning for every `mcp_servers` reference of a Person that the home's MCP inventory
/// (`known`, its server names; `None` when the home has no `mcp.kdl`) does not declare:
/// the reference reaches no harness. Located by the reference's JSON pointer; the name
/// itself is never echoed.
pub fn unknown_mcp_references(people: &[Person], known: Option<&BTreeSet<String>>) -> Vec<Diagnostic> {
    let mut findings = Vec::new();
    for person in people {
        let file = format!("{PEOPLE_DIRECTORY}/{}.json", person.id);
        for (index, name) in person.mcp_servers.iter().enumerate() {
            if known.is_some_and(|known| known.contains(name)) {
                continue;
            }
            let message = match known {
                Some(_) => "this MCP server is not in the home's MCP inventory (`mcp.kdl`)",
                None => "this MCP server cannot be resolved: the home has no MCP inventory (`mcp.kdl`)",
            };
            findings.push(
                crate::finding::warning("unknown-mcp-server", &file, message)
                    .pointer(format!("/mcp_servers/{index}"))
                    .hint("declare it in `<home>/mcp.kdl` (docs/mcp.md), or remove the reference"),
            );
        }
    }
    findings
}

/// The stem of `<slug>.json`, or `None` for any other name.
pub fn slug_stem(name: &str) -> Option<&str> {
    name.strip_suffix(".json").filter(|stem| is_slug(stem))
}

/// Checks one Person file in `folder` (`people` or `templates/people`): size, hardened
/// parse, schema, then the rules the schema cannot express (file name, id equals stem).
pub fn check_person(folder: &str, name: &str, bytes: &[u8]) -> Result<Person, Vec<Diagnostic>> {
    let path = format!("{folder}/{name}");
    let Some(stem) = slug_stem(name) else {
        return Err(vec![
            finding::error(
                "invalid-file-name",
                &path,
                "a person file must be named `<id>.json` with a lowercase slug id",
            )
            .pointer("/properties/id/pattern")
            .hint("rename the file to its id, e.g. `people/ada.json`"),
        ]);
    };
    let tree = parse_json(&path, bytes)?;
    let mut findings = schema::check(Contract::Person, &tree, &path);
    if !findings.is_empty() {
        return Err(findings);
    }
    if tree.value.get("id").and_then(serde_json::Value::as_str) != Some(stem) {
        findings.push(
            finding::error("id-file-mismatch", &path, "`id` does not equal the file name without `.json`")
                .at_position(tree.position("/id"))
                .pointer("/properties/id")
                .hint("rename the file or change `id` so they agree"),
        );
        return Err(findings);
    }
    decode_person(&tree.value)
        .ok_or_else(|| vec![finding::error("undecodable", &path, "the file passed the schema but could not be read")])
}

fn parse_json(path: &str, bytes: &[u8]) -> Result<Tree, Vec<Diagnostic>> {
    json::parse(bytes).map_err(|error| vec![finding::syntax(path, error)])
}

/// Checks `people/bindings.yaml`; every referenced id must name a file in `people/`.
/// The bindings are returned whenever they are well-formed, even with references to
/// missing People (reported as `binding-to-missing-person`): resolution skips those.
pub fn check_bindings(bytes: &[u8], present: &BTreeSet<String>) -> (Option<Bindings>, Vec<Diagnostic>) {
    let tree = match yaml::parse(bytes) {
        Ok(tree) => tree,
        Err(error) => return (None, vec![finding::syntax(BINDINGS_PATH, error)]),
    };
    let findings = schema::check(Contract::Bindings, &tree, BINDINGS_PATH);
    if !findings.is_empty() {
        return (None, findings);
    }
    let Some(bindings) = decode_bindings(&tree.value) else {
        return (
            None,
            vec![finding::error("undecodable", BINDINGS_PATH, "the file passed the schema but could not be read")],
        );
    };
    let mut findings = Vec::new();
    for (role, binding) in &bindings.roles {
        let mut role_pointer = String::from("/roles");
        super::tree::push_token(&mut role_pointer, role);
        let mut references: Vec<(String, &str, &'static str)> = Vec::new();
        if let Some(person_id) = &binding.person_id {
            references.push((
                format!("{role_pointer}/person_id"),
                person_id,
                "/properties/roles/additionalProperties/properties/person_id",
            ));
        }
        for (index, person_id) in binding.preferred_people.iter().enumerate() {
            references.push((
                format!("{role_pointer}/preferred_people/{index}"),
                person_id,
                "/properties/roles/additionalProperties/properties/preferred_people/items",
            ));
        }
        for (pointer, person_id, rule) in references {
            if !present.contains(person_id) {
                findings.push(
                    finding::error(
                        MISSING_BINDING_CODE,
                        BINDINGS_PATH,
                        "a binding names a Person with no file in `people/`",
                    )
                    .at_position(tree.position(&pointer))
                    .pointer(rule)
                    .hint("add the Person, or remove it from the binding"),
                );
            }
        }
    }
    findings.sort_by_key(|finding| finding.position);
    (Some(bindings), findings)
}

/// The code of a binding that names a Person with no file; resolution tolerates it.
pub const MISSING_BINDING_CODE: &str = "binding-to-missing-person";

#[cfg(test)]
mod tests {
    use super::*;

    fn person_json(id: &str) -> String {
        format!(
            r#"{{"spec": "agent-toolkit/person@1", "id": "{id}", "name": "N", "role": "reviewer", "goal": "G", "archived": false}}"#
        )
    }

    fn shipped_contract() -> ContractFiles {
        let files = contract::mirror_files();
        let bytes = |path: &str| files.iter().find(|file| file.path == path).map(|file| file.bytes.to_vec());
        ContractFiles {
            person_schema: bytes(contract::PERSON_SCHEMA_PATH),
            bindings_schema: bytes(contract::BINDINGS_SCHEMA_PATH),
            lock: bytes(contract::LOCK_PATH),
            listed: std::collections::BTreeMap::new(),
        }
    }

    fn codes(validation: &Validation) -> Vec<(&'static str, String)> {
        validation.findings.iter().map(|finding| (finding.code, finding.file.clone().unwrap_or_default())).collect()
    }

    #[test]
    fn a_valid_workspace_counts_people_but_not_templates() {
        let files = WorkspaceFiles {
            contract: shipped_contract(),
            people: vec![
                SourceFile::new("bob.json", person_json("bob")),
                SourceFile::new("ada.json", person_json("ada")),
            ],
            templates: vec![SourceFile::new("starter.json", person_json("starter"))],
            bindings: Some(
                b"spec: agent-toolkit/people-bindings@1\nroles:\n  reviewer:\n    person_id: bob\n".to_vec(),
            ),
            refused: Vec::new(),
        };
        let validation = validate_workspace(&files);
        assert_eq!(codes(&validation), []);
        let ids: Vec<&str> = validation.roster.people.iter().map(|person| person.id.as_str()).collect();
        assert_eq!(ids, ["ada", "bob"]);
        assert_eq!(validation.roster.templates, 1);
        assert!(validation.roster.has_bindings);
    }

    #[test]
    fn drift_stops_before_any_file_is_evaluated() {
        let mut contract = shipped_contract();
        contract.person_schema = Some(b"{}".to_vec());
        let files = WorkspaceFiles {
            contract,
            people: vec![SourceFile::new("ada.json", b"not json".to_vec())],
            ..WorkspaceFiles::default()
        };
        let validation = validate_workspace(&files);
        assert!(validation.stopped_at_contract);
        assert_eq!(codes(&validation), [("contract-drift", contract::PERSON_SCHEMA_PATH.to_owned())]);
    }

    #[test]
    fn file_rules_beyond_the_schema() {
        let files = WorkspaceFiles {
            people: vec![
                SourceFile::new("ada.json", person_json("bob")),
                SourceFile::new("Ada.json", person_json("ada")),
                SourceFile::new("big.json", vec![b' '; crate::MAX_FILE_BYTES + 1]),
            ],
            bindings: Some(
                b"spec: agent-toolkit/people-bindings@1\nroles:\n  reviewer:\n    preferred_people: [ada, ghost]\n"
                    .to_vec(),
            ),
            ..WorkspaceFiles::default()
        };
        let validation = load_roster(&files);
        assert_eq!(
            codes(&validation),
            [
                ("invalid-file-name", "people/Ada.json".to_owned()),
                ("id-file-mismatch", "people/ada.json".to_owned()),
                ("file-too-large", "people/big.json".to_owned()),
                ("binding-to-missing-person", BINDINGS_PATH.to_owned()),
            ]
        );
        let missing = validation.findings.last().and_then(|finding| finding.position);
        assert_eq!(missing.map(|position| (position.line, position.column)), Some((4, 29)));
    }
}
