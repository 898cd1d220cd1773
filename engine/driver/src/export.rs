//! Self-contained bundles: `bundle export` writes a bundle (its store links followed) as
//! one tar archive of real files, `bundle import` reads one back, checks it, and
//! materializes it into a store. The archive holds `<id>/<path>` regular files only,
//! sorted, with fixed modes, owners and times, so the same bundle gives the same bytes.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;

use acompose_engine::OutputFile;
use acompose_engine::bundle::{Bundle, Summary, TraceFile, verify};
use acompose_engine::diagnostic::{listed, sanitize};

use crate::bundle::{Materialization, read_bundle};
use crate::error::HostError;
use crate::load::error_kind;
use crate::placement::{Destination, place};

/// The most files an imported archive may hold.
const MAX_FILES: usize = 100_000;
/// The most bytes an imported archive may unpack to.
const MAX_BYTES: u64 = 1 << 30;

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    pub id: String,
    pub files: usize,
    pub bytes: u64,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    pub id: String,
    pub materialization: Materialization,
}

fn header(size: u64, directory: bool) -> tar::Header {
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(if directory { tar::EntryType::Directory } else { tar::EntryType::Regular });
    header.set_size(size);
    header.set_mode(if directory { 0o755 } else { 0o644 });
    header.set_mtime(0);
    header.set_uid(0);
    header.set_gid(0);
    header
}

/// The archive's bytes: folders then files under `<id>/`, sorted.
fn archive(id: &str, files: &BTreeMap<String, Vec<u8>>) -> Result<Vec<u8>, String> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut folders: Vec<String> = vec![String::new()];
    for path in files.keys() {
        let mut prefix = String::new();
        for part in path.split('/').collect::<Vec<_>>().split_last().map_or(&[][..], |(_, rest)| rest) {
            prefix = if prefix.is_empty() { (*part).to_owned() } else { format!("{prefix}/{part}") };
            folders.push(prefix.clone());
        }
    }
    folders.sort();
    folders.dedup();
    let failed = |error: std::io::Error| format!("cannot build the archive: {}", error_kind(&error));
    for folder in &folders {
        let name = if folder.is_empty() { format!("{id}/") } else { format!("{id}/{folder}/") };
        let mut header = header(0, true);
        builder.append_data(&mut header, &name, std::io::empty()).map_err(failed)?;
    }
    for (path, bytes) in files {
        let name = format!("{id}/{path}");
        let mut header = header(bytes.len() as u64, false);
        builder.append_data(&mut header, &name, bytes.as_slice()).map_err(failed)?;
    }
    builder.into_inner().map_err(failed)
}

/// Each problem as one line, escaped (a file name in an archive is anyone's), the list
/// capped with a count of the rest.
fn problem_lines(problems: Vec<acompose_engine::bundle::Problem>) -> String {
    let lines: Vec<String> =
        problems.into_iter().map(|problem| sanitize(&format!("{}: {}", problem.file, problem.message))).collect();
    listed(&lines, "; ")
}

/// `acompose bundle export BUNDLE --out FILE.tar`: verifies the bundle (through its store
/// links) and writes it as one archive of real files, atomically.
pub fn export(bundle: &Path, file: &Path) -> Result<Exported, HostError> {
    let failed = |problems: String| {
        HostError::invalid(bundle, format!("bundle `{}` failed verification: {problems}", bundle.display()))
    };
    let id = bundle
        .canonicalize()
        .ok()
        .and_then(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let files = read_bundle(bundle).map_err(|problems| failed(listed(&problems, "; ")))?;
    verify(&id, &files).map_err(|problems| failed(problem_lines(problems)))?;
    let bytes = archive(&id, &files).map_err(|message| HostError::environment(file, message))?;
    let folder = match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = file.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    if name.is_empty() {
        return Err(HostError::invalid(file, format!("`{}` names no file", file.display())));
    }
    crate::atomic::replace(folder, &name, &bytes)
        .map_err(|error| HostError::environment(file, format!("cannot write `{}`: {error}", file.display())))?;
    Ok(Exported { id, files: files.len(), bytes: bytes.len() as u64 })
}

/// Reads an archive into (id, files): every entry a folder or a regular file under one
/// `<id>/`, portable relative paths, bounded in count and size.
fn unpack(file: &Path) -> Result<(String, BTreeMap<String, Vec<u8>>), String> {
    let reader = std::fs::File::open(file)
        .map_err(|error| format!("cannot open `{}`: {}", file.display(), error_kind(&error)))?;
    let mut archive = tar::Archive::new(reader);
    let not_archive = |error: std::io::Error| format!("`{}` is not a readable tar archive: {error}", file.display());
    let mut id: Option<String> = None;
    let mut files = BTreeMap::new();
    let mut total = 0u64;
    for entry in archive.entries().map_err(not_archive)? {
        let mut entry = entry.map_err(not_archive)?;
        let path = entry.path().map_err(not_archive)?.to_string_lossy().into_owned();
        let shown = sanitize(&path);
        let path = path.trim_end_matches('/');
        let (first, rest) = path.split_once('/').unwrap_or((path, ""));
        if id.get_or_insert_with(|| first.to_owned()) != first {
            return Err(format!("`{}`: entry `{shown}` is outside the bundle folder", file.display()));
        }
        match entry.header().entry_type() {
            tar::EntryType::Directory => continue,
            tar::EntryType::Regular if !rest.is_empty() => {}
            _ => return Err(format!("`{}`: entry `{shown}` is not a regular file", file.display())),
        }
        if rest.split('/').any(|part| part.is_empty() || part == "." || part == "..") {
            return Err(format!("`{}`: entry `{shown}` has no portable relative path", file.display()));
        }
        total = total.saturating_add(entry.size());
        if files.len() >= MAX_FILES || total > MAX_BYTES {
            return Err(format!("`{}` is larger than a bundle may be", file.display()));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0).min(1 << 20));
        entry.read_to_end(&mut bytes).map_err(not_archive)?;
        if files.insert(rest.to_owned(), bytes).is_some() {
            return Err(format!("`{}`: entry `{shown}` appears twice", file.display()));
        }
    }
    let id = id.ok_or_else(|| format!("`{}` holds no bundle", file.display()))?;
    Ok((id, files))
}

/// `acompose bundle import FILE.tar`: reads the archive, verifies it as a bundle under
/// its own id, and materializes it at `destination` (its skills linked into its store).
pub fn import(file: &Path, destination: &Destination) -> Result<Imported, HostError> {
    let (id, files) = unpack(file).map_err(|message| HostError::invalid(file, message))?;
    if !(id.len() == 16 && id.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))) {
        return Err(HostError::invalid(file, format!("`{}` holds no bundle folder named by an id", file.display())));
    }
    verify(&id, &files).map_err(|problems| {
        HostError::invalid(file, format!("`{}` is not a valid bundle: {}", file.display(), problem_lines(problems)))
    })?;
    let mut files = files;
    // `verify` found the trace among the files.
    let trace = TraceFile::from_bytes(files.remove(TraceFile::PATH).unwrap_or_default().into());
    let bundle = Bundle {
        id: id.clone(),
        files: files.into_iter().map(|(path, bytes)| OutputFile { path, bytes: bytes.into() }).collect(),
        sourced: Vec::new(),
        trace,
        summary: Summary::default(),
    };
    let materialization = place(destination, &bundle)?;
    Ok(Imported { id, materialization })
}
