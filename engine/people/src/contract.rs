//! The schema mirrors a workspace carries (`schemas/*.schema.json`) and their SHA-256
//! lock. Owns what `people init` writes and the check `people validate` runs before any
//! schema is used: a mirror that differs from its lock, or a lock that names a contract
//! this binary does not ship, is reported as drift and never evaluated. A lock in the
//! Agent Toolkit's own format is handed to `toolkit_lock`. It does not evaluate schemas
//! itself.

use crate::finding;
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::schema::{BINDINGS_SCHEMA, PERSON_SCHEMA};
use super::{BINDINGS_SPEC, PERSON_SPEC, json, toolkit_lock};
use crate::Diagnostic;
use crate::OutputFile;

pub const PERSON_SCHEMA_PATH: &str = "schemas/person.schema.json";
pub const BINDINGS_SCHEMA_PATH: &str = "schemas/people-bindings.schema.json";
pub const LOCK_PATH: &str = "schemas/people-contracts.lock.json";
/// The spec string of the lock file.
pub(crate) const LOCK_SPEC: &str = "acompose/people-contracts-lock@1";

/// The contract files as the driver found them; `None` when absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContractFiles {
    pub person_schema: Option<Vec<u8>>,
    pub bindings_schema: Option<Vec<u8>>,
    pub lock: Option<Vec<u8>>,
    /// The bytes of every path an Agent Toolkit lock lists (`listed_paths`); empty for
    /// this project's own lock.
    pub listed: BTreeMap<String, Option<Vec<u8>>>,
}

/// The workspace files the driver must read besides the two mirrors and the lock: those
/// an Agent Toolkit lock lists (its validator script among them). Empty otherwise.
pub fn listed_paths(lock: &[u8]) -> Vec<String> {
    if toolkit_lock::is_toolkit_lock(lock) { toolkit_lock::listed_paths(lock) } else { Vec::new() }
}

/// What `people init` writes under `schemas/` given the lock already there: nothing when
/// the Agent Toolkit made the workspace (its mirrors and lock stay exactly as its own
/// validator expects them), else both mirrors and this project's lock.
pub fn init_files(existing_lock: Option<&[u8]>) -> Vec<OutputFile> {
    if existing_lock.is_some_and(toolkit_lock::is_toolkit_lock) { Vec::new() } else { mirror_files() }
}

/// One mirrored schema: where it lives, which spec it is and its shipped text.
struct Mirror {
    path: &'static str,
    spec: &'static str,
    text: &'static str,
}

const MIRRORS: [Mirror; 2] = [
    Mirror { path: PERSON_SCHEMA_PATH, spec: PERSON_SPEC, text: PERSON_SCHEMA },
    Mirror { path: BINDINGS_SCHEMA_PATH, spec: BINDINGS_SPEC, text: BINDINGS_SCHEMA },
];

/// Lowercase hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[derive(Serialize)]
struct LockFile {
    spec: &'static str,
    contracts: Vec<LockEntry>,
}

#[derive(Serialize)]
struct LockEntry {
    path: &'static str,
    spec: &'static str,
    sha256: String,
}

/// The bytes of `schemas/people-contracts.lock.json` for the shipped schemas.
pub(crate) fn lock_bytes() -> Vec<u8> {
    let lock = LockFile {
        spec: LOCK_SPEC,
        contracts: MIRRORS
            .iter()
            .map(|mirror| LockEntry {
                path: mirror.path,
                spec: mirror.spec,
                sha256: sha256_hex(mirror.text.as_bytes()),
            })
            .collect(),
    };
    super::document::json_bytes(&lock)
}

/// Everything `people init` writes under `schemas/`: both mirrors, then the lock.
pub(crate) fn mirror_files() -> Vec<OutputFile> {
    let mut files: Vec<OutputFile> = MIRRORS
        .iter()
        .map(|mirror| OutputFile { path: mirror.path.to_owned(), bytes: mirror.text.as_bytes().into() })
        .collect();
    files.push(OutputFile { path: LOCK_PATH.to_owned(), bytes: lock_bytes().into() });
    files
}

/// Verifies the mirrors against the lock, and the lock against the shipped contract.
/// Reads hashes only: no mirror is parsed or evaluated here or after a failure.
pub fn verify(files: &ContractFiles) -> Vec<Diagnostic> {
    let Some(lock) = &files.lock else {
        return vec![
            finding::error("contract-lock-missing", LOCK_PATH, "the schema lock is missing")
                .hint("run `acompose people init` to write the schema mirrors and their lock"),
        ];
    };
    if toolkit_lock::is_toolkit_lock(lock) {
        return toolkit_lock::verify(LOCK_PATH, lock, &files.listed);
    }
    let Some(locked) = locked_hashes(lock) else {
        return vec![
            finding::error("contract-lock-invalid", LOCK_PATH, "the schema lock is not a people-contracts lock")
                .hint("run `acompose people init` to rewrite the schema mirrors and their lock"),
        ];
    };
    let [person_hash, bindings_hash] = &locked;
    let mut findings = Vec::new();
    for (mirror, (bytes, locked_hash)) in
        MIRRORS.iter().zip([(&files.person_schema, person_hash), (&files.bindings_schema, bindings_hash)])
    {
        let Some(bytes) = bytes else {
            findings.push(
                finding::error("contract-mirror-missing", mirror.path, "a schema mirror is missing")
                    .hint("run `acompose people init` to write the schema mirrors and their lock"),
            );
            continue;
        };
        if sha256_hex(bytes) != *locked_hash {
            findings.push(
                finding::error(
                    "contract-drift",
                    mirror.path,
                    "the schema mirror differs from its lock; it was not evaluated",
                )
                .hint("review the change, then run `acompose people init` to restore the shipped schema"),
            );
            continue;
        }
        if *locked_hash != sha256_hex(mirror.text.as_bytes()) {
            findings.push(
                finding::error(
                    "contract-mismatch",
                    mirror.path,
                    "the locked schema is not the contract this acompose ships; it was not evaluated",
                )
                .hint("run `acompose people init` to restore the shipped schema and lock"),
            );
        }
    }
    findings
}

/// The locked hash of each mirror, in `MIRRORS` order; `None` unless the lock is exactly
/// `{spec, contracts: [{path, spec, sha256}, …]}` naming each mirror once.
fn locked_hashes(bytes: &[u8]) -> Option<[String; 2]> {
    let tree = json::parse(bytes).ok()?;
    let object = tree.value.as_object()?;
    if object.len() != 2 || object.get("spec")?.as_str()? != LOCK_SPEC {
        return None;
    }
    let entries = object.get("contracts")?.as_array()?;
    if entries.len() != MIRRORS.len() {
        return None;
    }
    let mut hashes: [Option<String>; 2] = [None, None];
    for entry in entries {
        let entry = entry.as_object()?;
        let text = |key: &str| entry.get(key).and_then(Value::as_str);
        if entry.len() != 3 {
            return None;
        }
        let index =
            MIRRORS.iter().position(|mirror| Some(mirror.path) == text("path") && Some(mirror.spec) == text("spec"))?;
        let hash = text("sha256")?;
        let slot = hashes.get_mut(index)?;
        if slot.is_some() || hash.len() != 64 || !hash.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return None;
        }
        *slot = Some(hash.to_ascii_lowercase());
    }
    let [Some(person), Some(bindings)] = hashes else {
        return None;
    };
    Some([person, bindings])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> ContractFiles {
        let files = mirror_files();
        let bytes = |path: &str| files.iter().find(|file| file.path == path).map(|file| file.bytes.to_vec());
        ContractFiles {
            person_schema: bytes(PERSON_SCHEMA_PATH),
            bindings_schema: bytes(BINDINGS_SCHEMA_PATH),
            lock: bytes(LOCK_PATH),
            listed: BTreeMap::new(),
        }
    }

    fn codes(files: &ContractFiles) -> Vec<(&'static str, String)> {
        verify(files).into_iter().map(|finding| (finding.code, finding.file.unwrap_or_default())).collect()
    }

    #[test]
    fn the_shipped_mirrors_verify() {
        assert_eq!(codes(&shipped()), []);
    }

    #[test]
    fn a_changed_mirror_is_drift() {
        let mut files = shipped();
        if let Some(bytes) = &mut files.person_schema {
            bytes.extend_from_slice(b" ");
        }
        assert_eq!(codes(&files), [("contract-drift", PERSON_SCHEMA_PATH.to_owned())]);
    }

    #[test]
    fn a_mirror_and_lock_changed_together_are_a_mismatch() {
        let mut files = shipped();
        let tampered = b"{\"type\": \"object\"}".to_vec();
        let lock = String::from_utf8(lock_bytes())
            .unwrap_or_default()
            .replace(&sha256_hex(BINDINGS_SCHEMA.as_bytes()), &sha256_hex(&tampered));
        files.bindings_schema = Some(tampered);
        files.lock = Some(lock.into_bytes());
        assert_eq!(codes(&files), [("contract-mismatch", BINDINGS_SCHEMA_PATH.to_owned())]);
    }

    #[test]
    fn missing_and_malformed_locks_are_reported() {
        let mut files = shipped();
        files.person_schema = None;
        assert_eq!(codes(&files), [("contract-mirror-missing", PERSON_SCHEMA_PATH.to_owned())]);
        files.lock = None;
        assert_eq!(codes(&files), [("contract-lock-missing", LOCK_PATH.to_owned())]);
        files.lock = Some(b"{\"spec\": \"acompose/people-contracts-lock@1\", \"contracts\": []}".to_vec());
        assert_eq!(codes(&files), [("contract-lock-invalid", LOCK_PATH.to_owned())]);
    }
}
