//! What interrupted writers leave behind — `.staging-<id>-<pid>` folders of bundles being
//! materialized and `.acompose-*.tmp` temporaries of atomic replacements — and removing it.
//! Only ever called by a run that holds the lock of the folder it cleans: the lock says no
//! other run is live there, so whatever matches is nobody's and goes, whatever its age.
//! Transaction journals are not debris: they are rolled back, never deleted unread; nor
//! is a prune's journal (`gc::PRUNE_JOURNAL`), which the next run finishes.

use std::path::Path;

/// Whether `name` is a staging folder's: `.staging-` then a bundle id (or `import`, the
/// archive `bundle import` unpacks), `-` and a pid.
pub fn is_staging(name: &str) -> bool {
    name.strip_prefix(".staging-").and_then(|rest| rest.split_once('-')).is_some_and(|(id, pid)| {
        (id == IMPORT_STAGING || (id.len() == 16 && id.bytes().all(|byte| byte.is_ascii_hexdigit())))
            && !pid.is_empty()
            && pid.bytes().all(|byte| byte.is_ascii_digit())
    })
}

/// What stands for the id in the name of the staging folder of `bundle import`.
pub const IMPORT_STAGING: &str = "import";

/// Whether `name` is a temporary of [`crate::home::atomic`]: `.acompose-` … `.tmp`.
pub fn is_temporary(name: &str) -> bool {
    name.len() > ".acompose-.tmp".len() && name.starts_with(".acompose-") && name.ends_with(".tmp")
}

/// Removes every staging folder and temporary directly in `folder`. The caller holds the
/// lock of `folder`. Returns how many were removed; failures are left for the next run
/// (a leftover only takes space).
pub fn remove(folder: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(folder) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
        let Ok(kind) = entry.file_type() else { continue };
        let gone = if kind.is_dir() && is_staging(&name) {
            std::fs::remove_dir_all(entry.path()).is_ok()
        } else if (kind.is_file() || kind.is_symlink()) && is_temporary(&name) {
            std::fs::remove_file(entry.path()).is_ok()
        } else {
            false
        };
        removed += usize::from(gone);
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_recognized_strictly() {
        assert!(is_staging(".staging-0123456789abcdef-42"));
        assert!(!is_staging(".staging-0123456789abcdef-"));
        assert!(!is_staging(".staging-short-42"));
        assert!(!is_staging("0123456789abcdef"));
        assert!(is_staging(".staging-import-42"));
        assert!(!is_staging(".staging-imports-42"));
        assert!(is_temporary(".acompose-Ab12Cd.tmp"));
        assert!(!is_temporary(".acompose-.tmp"));
        assert!(!is_temporary(".acompose-owned.json"));
        assert!(!is_temporary(".acompose-written"));
    }

    #[test]
    fn only_debris_is_removed() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let folder = temporary.path();
        std::fs::create_dir_all(folder.join(".staging-0123456789abcdef-7/content")).expect("staging");
        std::fs::write(folder.join(".acompose-x1Y2z3.tmp"), "half").expect("temporary");
        std::fs::create_dir(folder.join("0123456789abcdef")).expect("bundle");
        std::fs::write(folder.join(".acompose-written"), "").expect("record");
        std::fs::write(folder.join("index.json"), "{}").expect("index");
        assert_eq!(remove(folder), 2);
        let mut left: Vec<String> = std::fs::read_dir(folder)
            .expect("list")
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, [".acompose-written", "0123456789abcdef", "index.json"]);
    }
}
