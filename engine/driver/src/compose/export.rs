//! Self-contained bundles: `bundle export` writes a bundle (its store links followed) as
//! one tar archive of real files, `bundle import` reads one back in two streaming passes,
//! checks it, and materializes it into a store. The archive holds `<id>/<path>` regular files only,
//! sorted, with fixed modes, owners and times, so the same bundle gives the same bytes.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;

use acompose_engine::bundle::{
    Bundle, FileFacts, Manifest, Summary, TraceFile, WholeFiles, read_bundle_json, verify, verify_facts,
};
use acompose_engine::catalogue::Summarized;
use acompose_engine::diagnostic::{listed, sanitize};
use acompose_engine::portable::is_portable_path;
use acompose_engine::store::SKILLS_PREFIX;
use acompose_engine::trace::Trace;
use acompose_engine::{OutputFile, SourcedFile, limits};

use crate::compose::bundle::{Materialization, read_bundle};
use crate::compose::load::error_kind;
use crate::compose::placement::Destination;
use crate::error::HostError;

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
    /// The signature the archive carried beside the bundle, if any.
    pub signature: Option<String>,
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
fn archive(id: &str, files: &BTreeMap<String, Vec<u8>>, signature: Option<&str>) -> Result<Vec<u8>, String> {
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
    // The signature travels beside the bundle folder, as the home keeps it.
    if let Some(signature) = signature {
        let mut header = header(signature.len() as u64, false);
        builder.append_data(&mut header, signature_entry(id), signature.as_bytes()).map_err(failed)?;
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

/// The archive entry of a bundle's signature: `<id>.sig`, beside the `<id>/` folder.
fn signature_entry(id: &str) -> String {
    format!("{id}.sig")
}

/// The largest signature an archive may carry.
const MAX_SIGNATURE: u64 = 64 << 10;

/// `acompose bundle export BUNDLE --out FILE.tar`: verifies the bundle (through its store
/// links) and writes it as one archive of real files, atomically.
pub fn export(bundle: &Path, file: &Path) -> Result<Exported, HostError> {
    export_signed(bundle, file, None)
}

/// [`export`] with the bundle's signature (`docs/distribution.md`, "Signatures") as the
/// archive's last entry, `<id>.sig`.
pub fn export_signed(bundle: &Path, file: &Path, signature: Option<&str>) -> Result<Exported, HostError> {
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
    let bytes = archive(&id, &files, signature).map_err(|message| HostError::environment(file, message))?;
    let folder = match file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = file.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    if name.is_empty() {
        return Err(HostError::invalid(file, format!("`{}` names no file", file.display())));
    }
    crate::home::atomic::replace(folder, &name, &bytes)
        .map_err(|error| HostError::environment(file, format!("cannot write `{}`: {error}", file.display())))?;
    Ok(Exported { id, files: files.len(), bytes: bytes.len() as u64 })
}

/// What the first pass over an archive found: its bundle id, every file's path and size
/// (from the headers: no data was read), and the bytes of the two files verification
/// parses, each within its size limit.
/// The files verification reads whole, as the scan kept them.
fn whole_files(scanned: &Scanned) -> WholeFiles<'_> {
    WholeFiles {
        manifest: scanned.manifest.as_deref(),
        trace: scanned.trace.as_deref(),
        trace_index: scanned.trace_index.as_deref(),
    }
}

struct Scanned {
    id: String,
    /// The signature the archive carries beside the bundle folder.
    signature: Option<String>,
    sizes: BTreeMap<String, u64>,
    manifest: Option<Vec<u8>>,
    trace: Option<Vec<u8>>,
    trace_index: Option<Vec<u8>>,
}

/// The path of one entry inside the bundle folder, once it is known to be a regular file
/// under the one `<id>/` with a portable relative path; `None` for a folder.
fn entry_path(
    entry: &tar::Entry<'_, std::fs::File>,
    file: &Path,
    id: &mut Option<String>,
) -> Result<Option<String>, String> {
    let path = entry.path().map_err(|error| not_archive(file, &error))?.to_string_lossy().into_owned();
    let shown = sanitize(&path);
    let path = path.trim_end_matches('/');
    let (first, rest) = path.split_once('/').unwrap_or((path, ""));
    if id.get_or_insert_with(|| first.to_owned()) != first {
        return Err(format!("`{}`: entry `{shown}` is outside the bundle folder", file.display()));
    }
    match entry.header().entry_type() {
        tar::EntryType::Directory => return Ok(None),
        tar::EntryType::Regular if !rest.is_empty() => {}
        _ => return Err(format!("`{}`: entry `{shown}` is not a regular file", file.display())),
    }
    if rest.split('/').any(|part| part.is_empty() || part == "." || part == "..") {
        return Err(format!("`{}`: entry `{shown}` has no portable relative path", file.display()));
    }
    Ok(Some(rest.to_owned()))
}

/// The signature an entry carries when it is the `<id>.sig` beside the bundle folder
/// (a regular file of at most 64 KiB).
fn signature_of(
    entry: &mut tar::Entry<'_, std::fs::File>,
    file: &Path,
    id: Option<&str>,
) -> Result<Option<String>, String> {
    let Some(id) = id else { return Ok(None) };
    let path = entry.path().map_err(|error| not_archive(file, &error))?.to_string_lossy().into_owned();
    if path != signature_entry(id) || entry.header().entry_type() != tar::EntryType::Regular {
        return Ok(None);
    }
    if entry.size() > MAX_SIGNATURE {
        return Err(format!("`{}`: the signature is larger than {MAX_SIGNATURE} bytes", file.display()));
    }
    let mut text = String::new();
    entry.read_to_string(&mut text).map_err(|error| not_archive(file, &error))?;
    Ok(Some(text))
}

fn not_archive(file: &Path, error: &std::io::Error) -> String {
    format!("`{}` is not a readable tar archive: {error}", file.display())
}

fn open_archive(file: &Path) -> Result<tar::Archive<std::fs::File>, String> {
    std::fs::File::open(file)
        .map(tar::Archive::new)
        .map_err(|error| format!("cannot open `{}`: {}", file.display(), error_kind(&error)))
}

/// The first pass: every header checked (one `<id>/` folder, regular files with portable
/// paths, no file twice, bounded in count and size) and the data of every file but the
/// manifest and the trace skipped, not read.
fn scan(file: &Path) -> Result<Scanned, String> {
    let mut archive = open_archive(file)?;
    let mut scanned = Scanned {
        id: String::new(),
        signature: None,
        sizes: BTreeMap::new(),
        manifest: None,
        trace: None,
        trace_index: None,
    };
    let mut id = None;
    let mut total = 0u64;
    for entry in archive.entries_with_seek().map_err(|error| not_archive(file, &error))? {
        let mut entry = entry.map_err(|error| not_archive(file, &error))?;
        if let Some(signature) = signature_of(&mut entry, file, id.as_deref())? {
            scanned.signature = Some(signature);
            continue;
        }
        let Some(path) = entry_path(&entry, file, &mut id)? else { continue };
        let size = entry.size();
        total = total.saturating_add(size);
        if scanned.sizes.len() >= MAX_FILES || total > MAX_BYTES {
            return Err(format!("`{}` is larger than a bundle may be", file.display()));
        }
        let limit = match path.as_str() {
            "manifest.json" => Some(limits::BUNDLE_MANIFEST),
            TraceFile::PATH => Some(limits::BUNDLE_TRACE),
            // The trace's index is a small fraction of the trace.
            acompose_engine::trace_index::PATH => Some(limits::BUNDLE_TRACE),
            _ => None,
        };
        if let Some(limit) = limit {
            if let Some(too_large) = limit.check(usize::try_from(size).unwrap_or(usize::MAX), &path) {
                return Err(format!("`{}`: {}", file.display(), too_large.message));
            }
            let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            entry.read_to_end(&mut bytes).map_err(|error| not_archive(file, &error))?;
            let slot = match path.as_str() {
                "manifest.json" => &mut scanned.manifest,
                TraceFile::PATH => &mut scanned.trace,
                _ => &mut scanned.trace_index,
            };
            *slot = Some(bytes);
        }
        if scanned.sizes.insert(path.clone(), size).is_some() {
            return Err(format!("`{}`: entry `{}` appears twice", file.display(), sanitize(&path)));
        }
    }
    scanned.id = id.ok_or_else(|| format!("`{}` holds no bundle", file.display()))?;
    Ok(scanned)
}

/// Before any file's data is read or anything is written: a manifest and a trace that
/// parse (else verification's own problems with them), every path portable, every file
/// one the manifest lists at the size it lists, and every listed file there.
fn listing_problems(scanned: &Scanned) -> Vec<String> {
    let manifest = scanned
        .manifest
        .as_deref()
        .and_then(|bytes| read_bundle_json::<Manifest>("manifest.json", bytes, "manifest.json").ok());
    let trace_parses = scanned
        .trace
        .as_deref()
        .is_some_and(|bytes| read_bundle_json::<Trace>(TraceFile::PATH, bytes, TraceFile::PATH).is_ok());
    let Some(manifest) = manifest.filter(|_| trace_parses) else {
        // Verification stops at a manifest or trace it cannot read, and says why.
        let problems = verify_facts(&scanned.id, whole_files(scanned), &BTreeMap::new()).err().unwrap_or_default();
        return problems
            .into_iter()
            .map(|problem| sanitize(&format!("{}: {}", problem.file, problem.message)))
            .collect();
    };
    let listed: BTreeMap<&str, u64> = manifest.content.iter().map(|entry| (entry.path.as_str(), entry.bytes)).collect();
    let mut problems = Vec::new();
    for (path, size) in scanned.sizes.iter().filter(|(path, _)| path.as_str() != "manifest.json") {
        if !is_portable_path(path) {
            problems.push(sanitize(&format!("{path}: the name is not portable")));
            continue;
        }
        match listed.get(path.as_str()) {
            None => problems.push(sanitize(&format!("{path}: is not listed in the manifest"))),
            Some(listed) if listed != size => {
                problems.push(sanitize(&format!("{path}: its size differs from the manifest's")))
            }
            Some(_) => {}
        }
    }
    for path in listed.keys().filter(|path| !scanned.sizes.contains_key(**path)) {
        problems.push(sanitize(&format!("{path}: is listed in the manifest but missing")));
    }
    problems
}

/// The second pass: each file of the archive written into `staging` as it is read, with
/// its size and digest taken on the way; none is held in memory.
fn unpack_into(file: &Path, staging: &Path) -> Result<BTreeMap<String, FileFacts>, String> {
    let mut archive = open_archive(file)?;
    let mut facts = BTreeMap::new();
    let mut id = None;
    let cannot =
        |path: &Path, error: std::io::Error| format!("cannot write `{}`: {}", path.display(), error_kind(&error));
    for entry in archive.entries_with_seek().map_err(|error| not_archive(file, &error))? {
        let mut entry = entry.map_err(|error| not_archive(file, &error))?;
        if signature_of(&mut entry, file, id.as_deref())?.is_some() {
            continue;
        }
        let Some(path) = entry_path(&entry, file, &mut id)? else { continue };
        let target = staging.join(&path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|error| cannot(parent, error))?;
        }
        let mut writer = Hashing {
            inner: std::fs::File::create(&target).map_err(|error| cannot(&target, error))?,
            hasher: blake3::Hasher::new(),
            bytes: 0,
        };
        std::io::copy(&mut entry, &mut writer).map_err(|error| not_archive(file, &error))?;
        facts.insert(
            path,
            FileFacts { bytes: writer.bytes, digest: format!("blake3:{}", writer.hasher.finalize().to_hex()) },
        );
    }
    Ok(facts)
}

/// A file being written and the blake3 and length of what went into it (the digest a
/// manifest lists, `bundle::digest`).
struct Hashing {
    inner: std::fs::File,
    hasher: blake3::Hasher,
    bytes: u64,
}

impl std::io::Write for Hashing {
    fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(buffer)?;
        self.hasher.update(&buffer[..written]);
        self.bytes += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The bundle as the materializer takes it, from its files unpacked in `staging`: its own
/// files (all but the skills) read into memory, and each skill file summarized as the
/// convergence's catalogue files are and read again, from `staging`, when it is written
/// into the store. So at most one skill file is held at a time.
fn staged_bundle(
    id: &str,
    staging: &Path,
    facts: &BTreeMap<String, FileFacts>,
    trace: Vec<u8>,
) -> Result<Bundle, String> {
    let mut files = Vec::new();
    let mut sourced = Vec::new();
    for path in facts.keys().filter(|path| path.as_str() != TraceFile::PATH) {
        let location = staging.join(path);
        let bytes = std::fs::read(&location)
            .map_err(|error| format!("cannot read `{}`: {}", location.display(), error_kind(&error)))?;
        if path.starts_with(SKILLS_PREFIX) {
            let summarized = Summarized::of(location, path, path, &bytes);
            sourced.push(SourcedFile { path: path.clone(), source: std::sync::Arc::new(summarized) });
        } else {
            files.push(OutputFile { path: path.clone(), bytes: bytes.into() });
        }
    }
    Ok(Bundle {
        id: id.to_owned(),
        files,
        sourced,
        trace: TraceFile::from_bytes(trace.into()),
        summary: Summary::default(),
    })
}

/// `acompose bundle import FILE.tar`: reads the archive, verifies it as a bundle under
/// its own id, and materializes it at `destination` (its skills linked into its store).
///
/// In two passes over the archive, never holding it in memory: the first checks every
/// header and the manifest's listing (a file it does not list, or at another size, is
/// refused before a byte of it is read); the second writes each file into a staging
/// folder in the output folder as it is read, hashing it on the way. Verification then
/// works from sizes and digests, and the materializer reads the staged files one by one.
pub fn import(file: &Path, destination: &Destination) -> Result<Imported, HostError> {
    let invalid = |message: String| HostError::invalid(file, message);
    let scanned = scan(file).map_err(invalid)?;
    let id = scanned.id.clone();
    if !(id.len() == 16 && id.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))) {
        return Err(invalid(format!("`{}` holds no bundle folder named by an id", file.display())));
    }
    let not_valid = |problems: String| invalid(format!("`{}` is not a valid bundle: {problems}", file.display()));
    let problems = listing_problems(&scanned);
    if !problems.is_empty() {
        return Err(not_valid(listed(&problems, "; ")));
    }
    let locked = crate::compose::placement::lock(destination)?;
    let staging =
        destination.out.join(format!(".staging-{}-{}", crate::home::debris::IMPORT_STAGING, std::process::id()));
    let result = (|| {
        let facts = unpack_into(file, &staging).map_err(|message| HostError::environment(&staging, message))?;
        verify_facts(&id, whole_files(&scanned), &facts).map_err(|problems| not_valid(problem_lines(problems)))?;
        let bundle = staged_bundle(&id, &staging, &facts, scanned.trace.clone().unwrap_or_default())
            .map_err(|message| HostError::environment(&staging, message))?;
        crate::compose::placement::place_locked(destination, &locked, &bundle)
    })();
    let _ = std::fs::remove_dir_all(&staging);
    Ok(Imported { id, materialization: result?, signature: scanned.signature })
}
