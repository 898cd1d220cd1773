//! The Agent Toolkit's own lock format, `agent-toolkit/people-contracts-lock@1`, as
//! workspaces that the Toolkit made carry it in `schemas/people-contracts.lock.json`:
//! `{spec, source, files: {path: {sha256, source}}}`. Owns reading that lock and checking
//! every file it lists against its digest. It does not read files (the driver hands over
//! the bytes of the paths `listed_paths` names) and never evaluates a listed schema: the
//! People are validated with this project's own contract once the lock holds.

use crate::finding;
use std::collections::BTreeMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::json;
use crate::Diagnostic;

/// The spec string of a lock the Agent Toolkit wrote.
pub(crate) const TOOLKIT_LOCK_SPEC: &str = "agent-toolkit/people-contracts-lock@1";

/// Whether the bytes are a JSON object whose `spec` is the Toolkit's lock spec. Used to
/// choose the format before the lock is checked in full.
pub(crate) fn is_toolkit_lock(bytes: &[u8]) -> bool {
    json::parse(bytes).ok().is_some_and(|tree| {
        tree.value.as_object().and_then(|object| object.get("spec")).and_then(Value::as_str) == Some(TOOLKIT_LOCK_SPEC)
    })
}

/// The digest of every listed file, by workspace-relative path; `None` unless the lock
/// is exactly `{spec, source, files}` with a non-empty `files` map of safe relative paths
/// to `{sha256, source}` (64 hex digits and a string).
pub(crate) fn locked_files(bytes: &[u8]) -> Option<BTreeMap<String, String>> {
    let tree = json::parse(bytes).ok()?;
    let object = tree.value.as_object()?;
    if object.len() != 3 || object.get("spec")?.as_str()? != TOOLKIT_LOCK_SPEC {
        return None;
    }
    object.get("source")?.as_str()?;
    let files = object.get("files")?.as_object()?;
    if files.is_empty() {
        return None;
    }
    let mut digests = BTreeMap::new();
    for (path, entry) in files {
        let entry = entry.as_object()?;
        if entry.len() != 2 || !is_safe_relative(path) {
            return None;
        }
        entry.get("source")?.as_str()?;
        let digest = entry.get("sha256")?.as_str()?;
        if digest.len() != 64 || !digest.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return None;
        }
        digests.insert(path.clone(), digest.to_ascii_lowercase());
    }
    Some(digests)
}

/// The paths the driver must read for `verify`; empty when the lock is not valid.
pub fn listed_paths(bytes: &[u8]) -> Vec<String> {
    locked_files(bytes).map(|files| files.into_keys().collect()).unwrap_or_default()
}

/// `/`-separated, relative, no empty, `.` or `..` segment, no backslash, colon or
/// control character: a lock can never make the driver read outside the workspace.
fn is_safe_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains(['\\', ':'])
        && !path.chars().any(char::is_control)
        && path.split('/').all(|segment| !segment.is_empty() && segment != "." && segment != "..")
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Checks every file the Toolkit lock lists against its digest. `listed` holds the bytes
/// the driver found for each path of `listed_paths` (`None` when absent). Reads digests
/// only: nothing listed is parsed here or after a failure.
pub fn verify(lock_path: &str, lock: &[u8], listed: &BTreeMap<String, Option<Vec<u8>>>) -> Vec<Diagnostic> {
    let Some(files) = locked_files(lock) else {
        return vec![
            finding::error("contract-lock-invalid", lock_path, "the Agent Toolkit schema lock is malformed")
                .hint("restore the lock the Agent Toolkit wrote, or run the Toolkit's own setup again"),
        ];
    };
    let mut findings = Vec::new();
    for (path, digest) in &files {
        match listed.get(path).and_then(Option::as_ref) {
            None => findings.push(
                finding::error("contract-mirror-missing", path, "a file the schema lock lists is missing")
                    .hint("restore the file the Agent Toolkit wrote"),
            ),
            Some(bytes) if sha256_hex(bytes) != *digest => findings.push(
                finding::error("contract-drift", path, "the file differs from its lock; nothing was evaluated")
                    .hint("review the change, then restore the file the Agent Toolkit wrote"),
            ),
            Some(_) => {}
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock_for(files: &[(&str, &[u8])]) -> Vec<u8> {
        let entries: Vec<String> = files
            .iter()
            .map(|(path, bytes)| {
                format!("\"{path}\": {{\"sha256\": \"{}\", \"source\": \"upstream/{path}\"}}", sha256_hex(bytes))
            })
            .collect();
        format!(
            "{{\"spec\": \"{TOOLKIT_LOCK_SPEC}\", \"source\": \"https://example.invalid/toolkit\", \"files\": {{{}}}}}",
            entries.join(", ")
        )
        .into_bytes()
    }

    fn listed(files: &[(&str, &[u8])]) -> BTreeMap<String, Option<Vec<u8>>> {
        files.iter().map(|(path, bytes)| ((*path).to_owned(), Some(bytes.to_vec()))).collect()
    }

    fn codes(findings: &[Diagnostic]) -> Vec<(&'static str, String)> {
        findings.iter().map(|finding| (finding.code, finding.file.clone().unwrap_or_default())).collect()
    }

    #[test]
    fn every_listed_file_is_checked_against_its_digest() {
        let files: [(&str, &[u8]); 2] = [("schemas/person.schema.json", b"{}"), ("scripts/validate-people.py", b"x")];
        let lock = lock_for(&files);
        assert!(is_toolkit_lock(&lock));
        assert_eq!(listed_paths(&lock), ["schemas/person.schema.json", "scripts/validate-people.py"]);
        assert_eq!(codes(&verify("lock", &lock, &listed(&files))), []);
        let mut drifted = listed(&files);
        drifted.insert("scripts/validate-people.py".to_owned(), Some(b"y".to_vec()));
        assert_eq!(
            codes(&verify("lock", &lock, &drifted)),
            [("contract-drift", "scripts/validate-people.py".to_owned())]
        );
        let mut missing = listed(&files);
        missing.insert("schemas/person.schema.json".to_owned(), None);
        assert_eq!(
            codes(&verify("lock", &lock, &missing)),
            [("contract-mirror-missing", "schemas/person.schema.json".to_owned())]
        );
    }

    #[test]
    fn unsafe_paths_and_other_shapes_are_malformed() {
        for path in ["../outside", "/etc/passwd", "a//b", "a\\b", "./a"] {
            let lock = lock_for(&[(path, b"x")]);
            assert!(listed_paths(&lock).is_empty(), "{path}");
            assert_eq!(codes(&verify("lock", &lock, &BTreeMap::new())), [("contract-lock-invalid", "lock".to_owned())]);
        }
        let no_source = format!("{{\"spec\": \"{TOOLKIT_LOCK_SPEC}\", \"files\": {{}}}}");
        assert!(locked_files(no_source.as_bytes()).is_none());
        assert!(!is_toolkit_lock(b"{\"spec\": \"acompose/people-contracts-lock@1\"}"));
    }
}
