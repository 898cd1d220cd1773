//! Bundles on disk: materializing one (staging folder, verification, rename — the one
//! path by which an immutable output appears), verifying a bundle directory, and reading
//! a bundle's manifest and trace back. Builds no bundle; the engine does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use acompose_engine::bundle::{Bundle, MANIFEST_FORMAT, Manifest, Verified, verify};
use acompose_engine::trace::{self, Trace};
use rayon::prelude::*;

use crate::error::HostError;
use crate::load::error_kind;
use acompose_engine::bundle::{BundleJsonError, read_bundle_json};
use acompose_engine::limits;

/// Whether a bundle was written now or found already in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Materialized {
    New,
    Reused,
}

impl Materialized {
    pub fn name(self) -> &'static str {
        match self {
            Materialized::New => "new",
            Materialized::Reused => "reused",
        }
    }
}

/// How an existing or staged bundle is checked before it is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// Re-read and re-hash every file (what `verify` does).
    Full,
    /// Compare the manifest's bytes with the expected ones and every file's size; the id
    /// is content-addressed, so this catches missing, truncated or foreign bundles
    /// without reading every byte (estate convergence and watch mode).
    Light,
}

/// Checks `directory` against the bundle we expect to find there.
fn check_against(directory: &Path, bundle: &Bundle, verification: Verification) -> Result<(), String> {
    match verification {
        Verification::Full => {
            verify_directory_named(directory, &bundle.id).map(|_| ()).map_err(|problems| problems.join("; "))
        }
        Verification::Light => {
            let manifest = bundle.files.iter().find(|file| file.path == "manifest.json").map(|file| &file.bytes);
            match std::fs::read(directory.join("manifest.json")) {
                Ok(bytes) if Some(&bytes) == manifest => {}
                _ => return Err("manifest.json differs from the expected one".to_owned()),
            }
            let mismatch = bundle.files.par_iter().find_any(|file| {
                std::fs::symlink_metadata(directory.join(&file.path))
                    .map_or(true, |metadata| !metadata.is_file() || metadata.len() != file.bytes.len() as u64)
            });
            match mismatch {
                Some(file) => Err(format!("{}: missing or of the wrong size", file.path)),
                None => Ok(()),
            }
        }
    }
}

/// Writes a bundle into `out/<id>`: staging folder, verification, rename. An existing
/// bundle is verified and reused; a damaged one is an error. Files are written in
/// parallel after their folders exist.
///
/// Under the lock of `out`: the staging folders and temporaries interrupted runs left
/// there are removed first (no other run is live in `out` while the lock is held).
pub fn materialize(out: &Path, bundle: &Bundle) -> Result<Materialized, HostError> {
    let target = out.join(&bundle.id);
    std::fs::create_dir_all(out).map_err(|error| {
        HostError::environment(&target, format!("cannot create `{}`: {}", out.display(), error_kind(&error)))
    })?;
    let _lock = crate::transaction::lock(out, crate::home::LOCK_TIMEOUT)?;
    crate::debris::remove(out);
    materialize_with(out, bundle, Verification::Full)
}

/// [`materialize`] with a chosen verification of what is found or staged.
pub fn materialize_with(out: &Path, bundle: &Bundle, verification: Verification) -> Result<Materialized, HostError> {
    stage_verify_rename(out, bundle, verification)
        .map_err(|message| HostError::environment(out.join(&bundle.id), message))
}

fn stage_verify_rename(out: &Path, bundle: &Bundle, verification: Verification) -> Result<Materialized, String> {
    let target = out.join(&bundle.id);
    if std::fs::symlink_metadata(&target).is_ok() {
        return check_against(&target, bundle, verification).map(|()| Materialized::Reused).map_err(|problem| {
            format!("bundle `{}` exists but is damaged ({problem}); remove it to compose it again", target.display())
        });
    }
    std::fs::create_dir_all(out)
        .map_err(|error| format!("cannot create `{}`: {}", out.display(), error_kind(&error)))?;
    let staging = out.join(format!(".staging-{}-{}", bundle.id, std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let written = (|| -> Result<(), String> {
        let mut folders: Vec<PathBuf> =
            bundle.files.iter().filter_map(|file| staging.join(&file.path).parent().map(Path::to_path_buf)).collect();
        folders.sort();
        folders.dedup();
        for folder in &folders {
            std::fs::create_dir_all(folder)
                .map_err(|error| format!("cannot create `{}`: {}", folder.display(), error_kind(&error)))?;
        }
        bundle.files.par_iter().try_for_each(|file| {
            let path = staging.join(&file.path);
            std::fs::write(&path, &file.bytes)
                .map_err(|error| format!("cannot write `{}`: {}", path.display(), error_kind(&error)))
        })?;
        check_against(&staging, bundle, verification)
            .map_err(|problem| format!("the staged bundle failed verification: {problem}"))
    })();
    if let Err(error) = written {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(error);
    }
    match std::fs::rename(&staging, &target) {
        Ok(()) => Ok(Materialized::New),
        Err(_) if target.is_dir() => {
            // Another composition of the same inputs won the race: same id, same bytes.
            let _ = std::fs::remove_dir_all(&staging);
            check_against(&target, bundle, verification).map(|()| Materialized::Reused)
        }
        Err(error) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(format!("cannot move the bundle into `{}`: {}", target.display(), error_kind(&error)))
        }
    }
}

/// Reads every file of a bundle directory; symlinks and special files are problems.
pub fn read_bundle(directory: &Path) -> Result<BTreeMap<String, Vec<u8>>, Vec<String>> {
    match std::fs::symlink_metadata(directory) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            return Err(vec![format!("`{}` is a symbolic link", directory.display())]);
        }
        Ok(metadata) if metadata.is_dir() => {}
        Ok(_) => return Err(vec![format!("`{}` is not a directory", directory.display())]),
        Err(error) => {
            return Err(vec![format!("cannot open `{}`: {}", directory.display(), error_kind(&error))]);
        }
    }
    // A folder without a manifest is not a bundle; do not read the rest of it.
    if !std::fs::symlink_metadata(directory.join("manifest.json")).is_ok_and(|metadata| metadata.is_file()) {
        return Err(vec![format!("`{}` is not a bundle: it has no `manifest.json`", directory.display())]);
    }
    let mut files = BTreeMap::new();
    let mut problems = Vec::new();
    for entry in walkdir::WalkDir::new(directory).follow_links(false).sort_by_file_name() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(_) => {
                problems.push("an entry cannot be read".to_owned());
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        let relative = entry
            .path()
            .strip_prefix(directory)
            .unwrap_or(entry.path())
            .components()
            .map(|component| component.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        if entry.path_is_symlink() {
            problems.push(format!("{relative}: is a symbolic link"));
        } else if entry.file_type().is_file() {
            // The manifest and the trace have size limits: checked before they are read.
            let limit = match relative.as_str() {
                "manifest.json" => Some(limits::BUNDLE_MANIFEST),
                "trace.json" => Some(limits::BUNDLE_TRACE),
                _ => None,
            };
            let read = match limit {
                Some(limit) => crate::load::read_limited(entry.path(), &relative, limit),
                None => std::fs::read(entry.path()).map(Ok),
            };
            match read {
                Ok(Ok(bytes)) => {
                    files.insert(relative, bytes);
                }
                Ok(Err(too_large)) => problems.push(format!("{relative}: {}", too_large.message)),
                Err(error) => problems.push(format!("{relative}: {}", error_kind(&error))),
            }
        } else if !entry.file_type().is_dir() {
            problems.push(format!("{relative}: is not a regular file"));
        }
    }
    if problems.is_empty() { Ok(files) } else { Err(problems) }
}

fn directory_name(directory: &Path) -> String {
    directory
        .canonicalize()
        .ok()
        .and_then(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
        .unwrap_or_default()
}

/// Verifies a bundle directory whose name must be its id.
pub fn verify_directory(directory: &Path) -> Result<Verified, Vec<String>> {
    verify_directory_named(directory, &directory_name(directory))
}

/// Verifies a bundle directory against an expected id (a staging folder has another name).
pub fn verify_directory_named(directory: &Path, id: &str) -> Result<Verified, Vec<String>> {
    let files = read_bundle(directory)?;
    verify(id, &files).map_err(|problems| {
        problems.into_iter().map(|problem| format!("{}: {}", problem.file, problem.message)).collect()
    })
}

fn read_json<T: serde::de::DeserializeOwned>(bundle: &Path, name: &str) -> Result<T, String> {
    let path = bundle.join(name);
    match std::fs::symlink_metadata(&path) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            return Err(format!("`{}` is a symbolic link", path.display()));
        }
        Ok(metadata) if !metadata.is_file() => return Err(format!("`{}` is not a file", path.display())),
        Ok(_) => {}
        Err(error) => {
            return Err(format!("bundle `{}` has no readable `{name}`: {}", bundle.display(), error_kind(&error)));
        }
    }
    let limit = if name == "trace.json" { limits::BUNDLE_TRACE } else { limits::BUNDLE_MANIFEST };
    let label = path.display().to_string();
    let bytes = crate::load::read_limited(&path, &label, limit)
        .map_err(|error| format!("cannot read `{}`: {}", path.display(), error_kind(&error)))?
        .map_err(|too_large| format!("`{label}`: {} [{}]", too_large.message, too_large.code))?;
    read_bundle_json(name, &bytes, &label).map_err(|error| match error {
        BundleJsonError::TooLarge(too_large) => format!("`{label}`: {} [{}]", too_large.message, too_large.code),
        BundleJsonError::Invalid(error) => {
            format!("`{}` is not a valid {name} (line {}, column {})", path.display(), error.line(), error.column())
        }
    })
}

/// Reads a bundle's manifest and trace; the id is the directory's name.
pub fn read_provenance(bundle: &Path) -> Result<(String, Manifest, Trace), HostError> {
    provenance(bundle).map_err(|message| HostError::invalid(bundle, message))
}

fn provenance(bundle: &Path) -> Result<(String, Manifest, Trace), String> {
    if !bundle.is_dir() {
        return Err(format!("`{}` is not a bundle directory", bundle.display()));
    }
    let manifest: Manifest = read_json(bundle, "manifest.json")?;
    if manifest.format != MANIFEST_FORMAT {
        return Err(format!("`{}` holds an unknown manifest format", bundle.join("manifest.json").display()));
    }
    let trace: Trace = read_json(bundle, "trace.json")?;
    if trace.format != trace::FORMAT {
        return Err(format!("`{}` holds an unknown trace format", bundle.join("trace.json").display()));
    }
    let id = bundle
        .canonicalize()
        .ok()
        .and_then(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
        .unwrap_or_default();
    Ok((id, manifest, trace))
}
