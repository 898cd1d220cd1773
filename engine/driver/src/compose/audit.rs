//! The content audit on disk (`crate::engine::audit` holds the rules): every file of one
//! skill folder read and audited for `catalog check` and `catalog audit`, and the
//! refusals a home's indexed bundles recorded, for `doctor`. Reads only; never follows a
//! symbolic link; bounded in files and bytes whatever the folder holds.

use std::path::{Path, PathBuf};

use acompose_engine::audit::{self, AuditAction, AuditFinding, AuditPolicy};
use acompose_engine::diagnostic::{Diagnostic, sanitize};

use crate::home::Home;
use crate::home::read_index;

/// The most files of one skill folder the audit reads; the rest are named in one note.
const MAX_FILES: usize = 10_000;
/// A file larger than this is not read (no harness gives a model such a file whole).
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// How deep the audit walks into a skill folder.
const MAX_DEPTH: usize = 32;

/// The files of a skill folder, as paths under `folder` as given, in lexical order;
/// links and what is not a plain file or folder are left out.
fn skill_files(working_directory: &Path, folder: &Path) -> (Vec<PathBuf>, bool) {
    let mut files = Vec::new();
    let mut pending = vec![(folder.to_path_buf(), 0)];
    let mut cut = false;
    while let Some((directory, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(working_directory.join(&directory)) else { continue };
        let mut names: Vec<(std::ffi::OsString, std::fs::FileType)> = entries
            .flatten()
            .filter_map(|entry| entry.file_type().ok().map(|kind| (entry.file_name(), kind)))
            .collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, kind) in names {
            if kind.is_dir() && depth < MAX_DEPTH {
                pending.push((directory.join(&name), depth + 1));
            } else if kind.is_file() {
                if files.len() == MAX_FILES {
                    cut = true;
                    break;
                }
                files.push(directory.join(&name));
            }
        }
    }
    files.sort();
    (files, cut)
}

/// What the audit found in one skill folder: a diagnostic per finding (an error for a
/// refused kind, a warning else) and each finding with its file as shown.
#[derive(Debug, Default)]
pub struct FolderAudit {
    pub diagnostics: Vec<Diagnostic>,
    pub findings: Vec<(String, AuditFinding)>,
}

/// Audits every file of one skill folder (as given, read under `working_directory`).
pub fn audit_skill_folder(working_directory: &Path, folder: &Path, policy: &AuditPolicy) -> FolderAudit {
    let mut audit = FolderAudit::default();
    let (files, cut) = skill_files(working_directory, folder);
    for file in files {
        let shown = sanitize(&file.to_string_lossy().replace('\\', "/"));
        let on_disk = working_directory.join(&file);
        if std::fs::symlink_metadata(&on_disk).is_ok_and(|metadata| metadata.len() > MAX_FILE_BYTES) {
            audit.diagnostics.push(
                Diagnostic::note("audit-file-skipped", format!("larger than {MAX_FILE_BYTES} bytes; not audited"))
                    .in_file(shown),
            );
            continue;
        }
        let Ok(bytes) = std::fs::read(&on_disk) else { continue };
        let name = file.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        for finding in audit::audit_bytes(&bytes, audit::is_entry(&name)) {
            let action = policy.action(finding.kind);
            let diagnostic = match action {
                AuditAction::Refuse => audit::refusal(&finding, &shown, "no composition delivers the skill"),
                AuditAction::Warn => audit::diagnostic(&finding, &shown, action, ""),
            };
            audit.diagnostics.push(diagnostic);
            audit.findings.push((shown.clone(), finding));
        }
    }
    if cut {
        audit.diagnostics.push(
            Diagnostic::note("audit-files-omitted", format!("more than {MAX_FILES} files; the rest were not audited"))
                .in_file(sanitize(&folder.to_string_lossy())),
        );
    }
    audit
}

/// One refusal a home's indexed bundle recorded: the role, the subject and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub role: String,
    pub subject: String,
    pub reason: String,
}

/// The skills and instructions the content audit kept out of the bundles the home's
/// index names, in index order: what `doctor` reports.
pub fn refusals_in_home(home: &Home) -> Vec<Refusal> {
    let mut refusals = Vec::new();
    for (role, id) in read_index(home) {
        let bundle = home.bundles().join(&id);
        let Ok((_, _, trace)) = crate::compose::bundle::read_provenance(&bundle) else { continue };
        for decision in trace.decisions.into_iter().filter(|decision| decision.cause == "audit-refused") {
            refusals.push(Refusal { role: role.clone(), subject: decision.subject, reason: decision.reason });
        }
    }
    refusals
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_a_skill_is_audited_and_links_are_not_followed() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let root = temporary.path();
        std::fs::create_dir_all(root.join("s/references")).expect("mkdir");
        std::fs::write(root.join("s/SKILL.md"), "---\nname: s\ndescription: d\n---\nok\n").expect("skill");
        std::fs::write(root.join("s/references/notes.md"), "a\u{202E}b\n").expect("notes");
        std::fs::write(root.join("elsewhere.md"), "a\u{202E}b\n").expect("outside");
        std::os::unix::fs::symlink(root.join("elsewhere.md"), root.join("s/linked.md")).expect("link");
        let audit = audit_skill_folder(root, Path::new("s"), &AuditPolicy::default());
        let files: Vec<&str> = audit.findings.iter().map(|(file, _)| file.as_str()).collect();
        assert_eq!(files, ["s/references/notes.md"]);
        assert!(audit.diagnostics[0].is_error());
    }
}
