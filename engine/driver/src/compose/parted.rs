//! A bundle's own files as they are on disk: whole in the bundle's folder, or kept as
//! parts in the content store with a list in the folder (`trace.json.parts`, see
//! [`acompose_engine::parts`]). Every reader of `trace.json` and `trace.index` finds them
//! here, so the two forms read alike; the writer is [`write_parted`].

use std::io::Read as _;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

use acompose_engine::Diagnostic;
use acompose_engine::bundle::FileFacts;
use acompose_engine::limits::Limit;
use acompose_engine::parts::{LIST_LIMIT, MANIFEST, PARTED, Part, PartList, SUFFIX};

use crate::compose::load::error_kind;
use crate::compose::store::{Store, Written};

/// One own file of a bundle.
#[derive(Debug, Clone)]
pub enum OwnFile {
    /// The file itself, in the bundle's folder.
    Whole(PathBuf),
    /// A list in the bundle's folder naming the file's parts in a store.
    Parted(Parted),
}

/// A file kept as parts: the list's path, the store it names (resolved from the bundle's
/// folder) and the parts in order.
#[derive(Debug, Clone)]
pub struct Parted {
    pub list: PathBuf,
    pub store: PathBuf,
    pub parts: Vec<Part>,
}

/// What reading an own file gave: its bytes (or facts), or the size limit it is over; the
/// outer error is a message naming what could not be read.
pub type OwnRead<T> = Result<Result<T, Diagnostic>, String>;

/// `Some` for a regular file, `None` for nothing there; a link or anything else is an
/// error naming the path.
fn regular(path: &Path) -> Result<Option<u64>, String> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => Err(format!("`{}` is a symbolic link", path.display())),
        Ok(metadata) if metadata.is_file() => Ok(Some(metadata.len())),
        Ok(_) => Err(format!("`{}` is not a file", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(format!("cannot read `{}`: {}", path.display(), error_kind(&error))),
    }
}

fn cannot(what: &str, path: &Path, error: &std::io::Error) -> String {
    format!("cannot {what} `{}`: {}", path.display(), error_kind(error))
}

impl OwnFile {
    /// The own file `relative` of the bundle in `bundle`: whole, as parts, or `None` when
    /// neither is there. `limit` bounds the file a list may make.
    pub fn locate(bundle: &Path, relative: &str, limit: Limit) -> Result<Option<OwnFile>, String> {
        let whole = bundle.join(relative);
        if regular(&whole)?.is_some() {
            return Ok(Some(OwnFile::Whole(whole)));
        }
        if !PARTED.contains(&relative) {
            return Ok(None);
        }
        let list = bundle.join(format!("{relative}{SUFFIX}"));
        match regular(&list)? {
            Some(_) => OwnFile::of_list(bundle, &list, limit).map(Some),
            None => Ok(None),
        }
    }

    /// The file a list at `list` in the bundle folder `bundle` stands for.
    pub fn of_list(bundle: &Path, list: &Path, limit: Limit) -> Result<OwnFile, String> {
        let file = std::fs::File::open(list).map_err(|error| cannot("read", list, &error))?;
        let mut text = Vec::new();
        file.take(LIST_LIMIT as u64 + 1).read_to_end(&mut text).map_err(|error| cannot("read", list, &error))?;
        let parsed =
            PartList::parse(&text, limit.bytes as u64).map_err(|problem| format!("`{}` {problem}", list.display()))?;
        let store = parsed.store.split('/').fold(bundle.to_path_buf(), |path, part| path.join(part));
        Ok(OwnFile::Parted(Parted { list: list.to_path_buf(), store, parts: parsed.parts }))
    }

    /// The path a problem names: the file, or its list.
    pub fn path(&self) -> &Path {
        match self {
            OwnFile::Whole(path) => path,
            OwnFile::Parted(parted) => &parted.list,
        }
    }

    /// The file's size (a list's parts are not looked at).
    pub fn length(&self) -> Result<u64, String> {
        match self {
            OwnFile::Whole(path) => std::fs::symlink_metadata(path)
                .map(|metadata| metadata.len())
                .map_err(|error| cannot("read", path, &error)),
            OwnFile::Parted(parted) => Ok(parted.parts.iter().map(|part| part.length).sum()),
        }
    }

    /// Whether the file is whole, or its parts are in the store at their sizes (a glance:
    /// one stat a part), and `length` bytes long.
    pub fn looks_intact(&self, length: u64) -> bool {
        match self {
            OwnFile::Whole(path) => std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.len() == length),
            OwnFile::Parted(parted) => {
                let store = Store::at(parted.store.clone());
                self.length().is_ok_and(|total| total == length)
                    && parted.parts.iter().all(|part| store.part_looks_intact(part))
            }
        }
    }

    /// The file's bytes, within `limit`; each part is checked against its name.
    pub fn read(&self, label: &str, limit: Limit) -> OwnRead<Vec<u8>> {
        match self {
            OwnFile::Whole(path) => {
                crate::compose::load::read_limited(path, label, limit).map_err(|error| cannot("read", path, &error))
            }
            OwnFile::Parted(parted) => {
                if let Some(too_large) = limit.check(usize::try_from(self.length()?).unwrap_or(usize::MAX), label) {
                    return Ok(Err(too_large));
                }
                let mut bytes = Vec::new();
                parted.each_part(&mut |part| bytes.extend_from_slice(part))?;
                Ok(Ok(bytes))
            }
        }
    }

    /// The file's size and digest, hashed as it is read (never held whole), within
    /// `limit`; each part is checked against its name.
    pub fn facts(&self, label: &str, limit: Option<Limit>) -> OwnRead<FileFacts> {
        let over =
            |length: u64| limit.and_then(|limit| limit.check(usize::try_from(length).unwrap_or(usize::MAX), label));
        if let Some(too_large) = over(self.length()?) {
            return Ok(Err(too_large));
        }
        let mut hasher = blake3::Hasher::new();
        let length = match self {
            OwnFile::Whole(path) => {
                let file = std::fs::File::open(path).map_err(|error| cannot("read", path, &error))?;
                let most = limit.map_or(u64::MAX, |limit| limit.bytes as u64 + 1);
                std::io::copy(&mut file.take(most), &mut hasher).map_err(|error| cannot("read", path, &error))?
            }
            OwnFile::Parted(parted) => {
                let mut length = 0;
                parted.each_part(&mut |part| {
                    hasher.update(part);
                    length += part.len() as u64;
                })?;
                length
            }
        };
        if let Some(too_large) = over(length) {
            return Ok(Err(too_large));
        }
        Ok(Ok(FileFacts { bytes: length, digest: format!("blake3:{}", hasher.finalize().to_hex()) }))
    }

    /// The bytes of `range` (which must lie within the file). Parts are not checked here:
    /// the caller checks what it reads (the trace's blocks against its index).
    pub fn read_at(&self, range: std::ops::Range<u64>) -> Result<Vec<u8>, String> {
        let mut bytes = vec![0; usize::try_from(range.end - range.start).unwrap_or(0)];
        match self {
            OwnFile::Whole(path) => {
                let file = std::fs::File::open(path).map_err(|error| cannot("read", path, &error))?;
                file.read_exact_at(&mut bytes, range.start).map_err(|error| cannot("read", path, &error))?;
            }
            OwnFile::Parted(parted) => {
                let mut at = 0u64;
                for part in &parted.parts {
                    let (start, end) = (at, at + part.length);
                    at = end;
                    if end <= range.start || start >= range.end {
                        continue;
                    }
                    let from = range.start.max(start);
                    let to = range.end.min(end);
                    let path = parted.store.join(part.entry_name());
                    let file = std::fs::File::open(&path).map_err(|error| cannot("read", &path, &error))?;
                    let into = usize::try_from(from - range.start).unwrap_or(0);
                    let size = usize::try_from(to - from).unwrap_or(0);
                    file.read_exact_at(&mut bytes[into..into + size], from - start)
                        .map_err(|error| cannot("read", &path, &error))?;
                }
                if at < range.end {
                    return Err(format!("`{}` lists fewer bytes than were asked for", parted.list.display()));
                }
            }
        }
        Ok(bytes)
    }
}

impl Parted {
    /// Reads each part in order, checks it against its name and hands it to `take`.
    fn each_part(&self, take: &mut dyn FnMut(&[u8])) -> Result<(), String> {
        for part in &self.parts {
            let path = self.store.join(part.entry_name());
            match regular(&path)? {
                Some(length) if length == part.length => {}
                Some(_) => return Err(damaged(&path)),
                None => return Err(format!("store entry `{}` is missing", path.display())),
            }
            let bytes = std::fs::read(&path).map_err(|error| cannot("read", &path, &error))?;
            if !part.holds(&bytes) {
                return Err(damaged(&path));
            }
            take(&bytes);
        }
        Ok(())
    }
}

/// The size limit of a file a bundle may keep as parts.
pub fn own_limit(file: &str) -> Limit {
    match file {
        acompose_engine::trace_index::PATH => acompose_engine::limits::BUNDLE_TRACE_INDEX,
        MANIFEST => acompose_engine::limits::BUNDLE_MANIFEST,
        _ => acompose_engine::limits::BUNDLE_TRACE,
    }
}

/// Whether `folder` holds a manifest, whole or as parts: what makes a folder a bundle
/// (looked at, not read).
pub fn has_manifest(folder: &Path) -> bool {
    let file = |path: PathBuf| std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_file());
    file(folder.join(MANIFEST)) || file(folder.join(format!("{MANIFEST}{SUFFIX}")))
}

/// A bundle's `manifest.json`, whole or put together from its parts, within its limit.
pub fn manifest_bytes(bundle: &Path) -> Result<Vec<u8>, String> {
    let limit = own_limit(MANIFEST);
    let label = bundle.join(MANIFEST).display().to_string();
    match OwnFile::locate(bundle, MANIFEST, limit)? {
        Some(file) => file.read(&label, limit)?.map_err(|too_large| format!("`{label}`: {}", too_large.message)),
        None => Err(format!("bundle `{}` has no `{MANIFEST}`", bundle.display())),
    }
}

fn damaged(path: &Path) -> String {
    format!("store entry `{}` is damaged: its contents do not hash to its name", path.display())
}

/// Writes `bytes` as the parted file `relative` of the bundle staged in `staging`: the
/// parts the store lacks, then the list naming `store_relative` (the store as the
/// bundle's folder reaches it). Returns how many entries and files it wrote, or `None`
/// when the list cannot name that store (the caller writes the file whole).
pub fn write_parted(
    store: &Store,
    store_relative: &str,
    staging: &Path,
    relative: &str,
    bytes: &[u8],
) -> Result<Option<usize>, String> {
    use rayon::prelude::*;
    let cut = acompose_engine::parts::cut(bytes);
    let list = PartList { store: store_relative.to_owned(), parts: cut.iter().map(|(_, part)| part.clone()).collect() };
    let Some(text) = list.text() else { return Ok(None) };
    store.begin_staging();
    let written = cut
        .par_iter()
        .map(|(range, part)| {
            store.put_part(part, &bytes[range.clone()]).map(|written| usize::from(written == Written::New))
        })
        .try_reduce(|| 0, |a, b| Ok(a + b));
    store.end_staging();
    let path = staging.join(format!("{relative}{SUFFIX}"));
    std::fs::write(&path, text).map_err(|error| cannot("write", &path, &error))?;
    Ok(Some(written? + 1))
}

/// Writes the parted file `relative` of the bundle staged in `staging` from its bytes as
/// `serialize_from` hands them over, cut where `parts` (measured when the file was
/// composed) says: only the parts the store lacks are serialized, gathered, checked
/// against their keys and put; then the list. `resumes` are the offsets (ascending) where
/// serializing can start again: `serialize_from(Some(k), out)` writes the file from
/// `resumes[k]` on, `serialize_from(None, out)` from its start. Each run of lacking parts
/// is serialized from the nearest resume before it and no further than its end, so an
/// edit that changed one part serializes about one part. Holds at most one part. `None`
/// when the list cannot name that store (the caller writes the file whole); bytes that
/// do not make `parts` are an error and leave the parts already put, which no list
/// names, to `gc`.
pub fn write_streamed(
    store: &Store,
    store_relative: &str,
    staging: &Path,
    relative: &str,
    parts: &[Part],
    resumes: &[u64],
    serialize_from: impl Fn(Option<usize>, &mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<Option<usize>, String> {
    let list = PartList { store: store_relative.to_owned(), parts: parts.to_vec() };
    let Some(text) = list.text() else { return Ok(None) };
    let path = staging.join(format!("{relative}{SUFFIX}"));
    store.begin_staging();
    let written = put_lacking_parts(store, parts, resumes, &serialize_from);
    store.end_staging();
    let written = written.map_err(|problem| format!("cannot write `{}`: {problem}", path.display()))?;
    std::fs::write(&path, text).map_err(|error| cannot("write", &path, &error))?;
    Ok(Some(written + 1))
}

/// The runs of consecutive parts the store lacks: (offset of the first, first index, end
/// index).
fn lacking_runs(store: &Store, parts: &[Part]) -> Vec<(u64, usize, usize)> {
    let mut runs: Vec<(u64, usize, usize)> = Vec::new();
    let mut offset = 0;
    for (index, part) in parts.iter().enumerate() {
        if !store.part_looks_intact(part) {
            match runs.last_mut() {
                Some((_, _, end)) if *end == index => *end = index + 1,
                _ => runs.push((offset, index, index + 1)),
            }
        }
        offset += part.length;
    }
    runs
}

/// Writes a file's bytes from the resume of this index (`None`: from its start).
type SerializeFrom<'a> = dyn Fn(Option<usize>, &mut dyn std::io::Write) -> std::io::Result<()> + 'a;

/// Serializes each run of parts the store lacks and puts them; returns how many it wrote.
fn put_lacking_parts(
    store: &Store,
    parts: &[Part],
    resumes: &[u64],
    serialize_from: &SerializeFrom<'_>,
) -> Result<usize, String> {
    let mut written = 0;
    for (start, first, end) in lacking_runs(store, parts) {
        let resume = resumes.partition_point(|&at| at <= start).checked_sub(1);
        let mut sink = Run {
            store,
            parts: &parts[first..end],
            to_the_end: end == parts.len(),
            position: resume.map_or(0, |index| resumes[index]),
            skip_to: start,
            next: 0,
            gathered: Vec::new(),
            written: 0,
            outcome: None,
        };
        let serialized = serialize_from(resume, &mut sink);
        match sink.outcome {
            Some(Ok(())) => {}
            Some(Err(problem)) => return Err(problem),
            None if sink.to_the_end && sink.next == sink.parts.len() => {
                serialized.map_err(|error| error_kind(&error))?;
            }
            None => {
                serialized.map_err(|error| error_kind(&error))?;
                return Err("the file is shorter than when it was composed".to_owned());
            }
        }
        written += sink.written;
    }
    Ok(written)
}

/// The sink of one run of lacking parts: passes over the bytes before the run, gathers
/// each part and puts it, and stops the serialization after the run's last part (or, for
/// a run at the file's end, refuses any byte after it).
struct Run<'a> {
    store: &'a Store,
    parts: &'a [Part],
    to_the_end: bool,
    /// The offset in the file of the next byte handed over.
    position: u64,
    /// Where the run's first part starts.
    skip_to: u64,
    /// The part being gathered.
    next: usize,
    gathered: Vec<u8>,
    written: usize,
    /// `Ok` once the run is written (the serialization is then stopped); `Err` for
    /// bytes that do not make the parts.
    outcome: Option<Result<(), String>>,
}

impl Run<'_> {
    fn stop(&mut self, outcome: Result<(), String>) -> std::io::Error {
        self.outcome = Some(outcome);
        std::io::Error::other("the run of parts is written")
    }
}

impl std::io::Write for Run<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let passed = usize::try_from(self.skip_to.saturating_sub(self.position)).unwrap_or(usize::MAX);
        let mut rest = &bytes[passed.min(bytes.len())..];
        self.position += (bytes.len() - rest.len()) as u64;
        while !rest.is_empty() {
            let Some(part) = self.parts.get(self.next) else {
                return Err(self.stop(Err("the file is longer than when it was composed".to_owned())));
            };
            let room = usize::try_from(part.length).unwrap_or(usize::MAX) - self.gathered.len();
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.gathered.extend_from_slice(now);
            self.position += now.len() as u64;
            rest = later;
            if self.gathered.len() as u64 == part.length {
                match self.store.put_part(part, &self.gathered) {
                    Ok(written) => self.written += usize::from(written == Written::New),
                    Err(problem) => return Err(self.stop(Err(problem))),
                }
                self.gathered.clear();
                self.next += 1;
                if self.next == self.parts.len() && !self.to_the_end {
                    return Err(self.stop(Ok(())));
                }
            }
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Puts `bytes` in the store as one part (unless it is there) and hard-links the bundle's
/// file `relative` in `staging` to it. `None` when the link cannot be made (another file
/// system, a full link count): the caller writes the file. `gc` keeps a part while a
/// bundle's link holds it (its link count is above one).
pub fn link_whole(store: &Store, staging: &Path, relative: &str, bytes: &[u8]) -> Result<Option<usize>, String> {
    let part = Part::of(bytes);
    store.begin_staging();
    let written = store.put_part(&part, bytes);
    store.end_staging();
    let path = staging.join(relative);
    match std::fs::hard_link(store.root().join(part.entry_name()), &path) {
        Ok(()) => Ok(Some(usize::from(written? == Written::New) + 1)),
        Err(_) => Ok(None),
    }
}

/// The parts the lists of a bundle folder name, with the store each list names: for
/// `gc` and the fingerprints, which keep what bundles reach. A list that cannot be read
/// names nothing.
pub fn listed_parts(bundle: &Path) -> Vec<(Store, String)> {
    let mut listed = Vec::new();
    for file in PARTED {
        let list = bundle.join(format!("{file}{SUFFIX}"));
        if !regular(&list).is_ok_and(|found| found.is_some()) {
            continue;
        }
        if let Ok(OwnFile::Parted(parted)) = OwnFile::of_list(bundle, &list, own_limit(file)) {
            let store = parted.store.canonicalize().unwrap_or(parted.store);
            listed.extend(parted.parts.iter().map(|part| (Store::at(store.clone()), part.entry_name())));
        }
    }
    listed
}

/// The store entries a bundle folder names itself: the slices its provider folders link
/// to and the parts its lists name, each with its store. (The trees are reached through
/// the slices: see [`Store::reachable`].)
///
/// A bundle is never changed once written, and each quiet moment of a watch asks this of
/// every bundle of the home (to prune, and for the fingerprints): what was found is kept
/// with the numbers of the folder of provider links and of the lists then, and given
/// again while those numbers are the same. A link replaced or a list written changes
/// them; numbers within a timestamp tick of now are not trusted (nothing is kept).
pub fn linked_entries(bundle: &Path) -> Vec<(Store, String)> {
    let looked = looked_at(bundle);
    let mut known = linked_memory();
    if let Some(entries) = known.get(bundle).filter(|found| found.0 == looked).map(|found| found.1.clone()) {
        return entries;
    }
    drop(known);
    let mut entries = crate::compose::store::linked_slices(bundle);
    entries.extend(listed_parts(bundle));
    if looked.iter().flatten().all(|stat| !crate::home::observe::is_racy(stat)) {
        known = linked_memory();
        // A long watch makes a bundle per edit: what is kept stays bounded.
        if known.len() >= LINKED_KEPT {
            known.clear();
        }
        known.insert(bundle.to_path_buf(), (looked, entries.clone()));
    }
    entries
}

/// At most how many bundle folders' entries [`linked_entries`] keeps.
const LINKED_KEPT: usize = 256;

/// The numbers [`linked_entries`] checks: the folder of provider links, then each list.
type Looked = [Option<crate::home::observe::Stat>; 1 + PARTED.len()];

fn looked_at(bundle: &Path) -> Looked {
    let stat =
        |path: PathBuf| std::fs::symlink_metadata(path).ok().map(|metadata| crate::home::observe::Stat::of(&metadata));
    let mut looked = [None; 1 + PARTED.len()];
    looked[0] = stat(bundle.join(acompose_engine::store::SKILLS_PREFIX.trim_end_matches('/')));
    for (slot, file) in looked[1..].iter_mut().zip(PARTED) {
        *slot = stat(bundle.join(format!("{file}{SUFFIX}")));
    }
    looked
}

type LinkedMemory = std::collections::HashMap<PathBuf, (Looked, Vec<(Store, String)>)>;

fn linked_memory() -> std::sync::MutexGuard<'static, LinkedMemory> {
    static KNOWN: std::sync::OnceLock<std::sync::Mutex<LinkedMemory>> = std::sync::OnceLock::new();
    KNOWN.get_or_init(Default::default).lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `length` bytes of hex text, varied enough for content-defined cuts (blake3's
    /// extendable output of `seed`).
    fn text(seed: u64, length: usize) -> Vec<u8> {
        let mut raw = vec![0u8; length.div_ceil(2)];
        blake3::Hasher::new().update(&seed.to_le_bytes()).finalize_xof().fill(&mut raw);
        let mut hex: Vec<u8> = raw.iter().flat_map(|byte| format!("{byte:02x}").into_bytes()).collect();
        hex.truncate(length);
        hex
    }

    /// A temporary folder with an empty store and a staging folder in it.
    fn store_and_staging() -> (tempfile::TempDir, Store, PathBuf) {
        let folder = tempfile::tempdir().expect("tempdir");
        let store = Store::at(folder.path().join("store"));
        store.create().expect("store");
        let staging = folder.path().join("staging");
        std::fs::create_dir(&staging).expect("staging");
        (folder, store, staging)
    }

    fn cut(bytes: &[u8]) -> Vec<Part> {
        acompose_engine::parts::cut(bytes).into_iter().map(|(_, part)| part).collect()
    }

    fn streamed(store: &Store, staging: &Path, parts: &[Part], bytes: &[u8]) -> Result<Option<usize>, String> {
        resumed(store, staging, parts, &[], bytes)
    }

    /// Serializes `bytes` from the resumes given, counting the bytes handed over.
    fn resumed(
        store: &Store,
        staging: &Path,
        parts: &[Part],
        resumes: &[u64],
        bytes: &[u8],
    ) -> Result<Option<usize>, String> {
        write_streamed(store, "store", staging, "trace.json", parts, resumes, |resume, out| {
            let from = resume.map_or(0, |index| usize::try_from(resumes[index]).unwrap());
            bytes[from..].chunks(40_000).try_for_each(|piece| out.write_all(piece))
        })
    }

    #[test]
    fn a_streamed_file_writes_only_the_parts_the_store_lacks_and_refuses_other_bytes() {
        let (_folder, store, staging) = store_and_staging();
        let bytes = text(3, 700_000);
        let parts = cut(&bytes);
        assert!(parts.len() > 5);
        assert_eq!(streamed(&store, &staging, &parts, &bytes), Ok(Some(parts.len() + 1)));
        assert!(parts.iter().all(|part| store.part_looks_intact(part)));
        let list = std::fs::read_to_string(staging.join("trace.json.parts")).expect("list");
        assert_eq!(PartList::parse(list.as_bytes(), u64::MAX).map(|list| list.parts), Ok(parts.clone()));
        // Again: every part is there, only the list is written.
        assert_eq!(streamed(&store, &staging, &parts, &bytes), Ok(Some(1)));
        // One part gone: it alone is written again.
        std::fs::remove_file(store.root().join(parts[2].entry_name())).expect("remove");
        assert_eq!(streamed(&store, &staging, &parts, &bytes), Ok(Some(2)));
        // Bytes that are not the measured ones: a changed part, a longer or a shorter file.
        let mut changed = bytes.clone();
        changed[300_000] ^= 1;
        for other in [changed, [&bytes[..], b"x"].concat(), bytes[..bytes.len() - 1].to_vec()] {
            for part in &parts {
                let _ = std::fs::remove_file(store.root().join(part.entry_name()));
            }
            let _ = std::fs::remove_file(staging.join("trace.json.parts"));
            assert!(streamed(&store, &staging, &parts, &other).is_err());
            assert!(!staging.join("trace.json.parts").exists(), "no list for bytes that are not the file's");
        }
    }

    #[test]
    fn a_file_with_places_to_resume_serializes_only_around_the_parts_the_store_lacks() {
        let (_folder, store, staging) = store_and_staging();
        let bytes = text(5, 900_000);
        let parts = cut(&bytes);
        assert!(parts.len() > 6);
        let resumes: Vec<u64> = (1..30).map(|at| at * 30_000).collect();
        let handed = std::cell::Cell::new(0usize);
        let counted = |parts: &[Part], bytes: &[u8]| {
            handed.set(0);
            write_streamed(&store, "store", &staging, "trace.json", parts, &resumes, |resume, out| {
                let from = resume.map_or(0, |index| usize::try_from(resumes[index]).unwrap());
                bytes[from..].chunks(10_000).try_for_each(|piece| {
                    handed.set(handed.get() + piece.len());
                    out.write_all(piece)
                })
            })
        };
        assert_eq!(counted(&parts, &bytes), Ok(Some(parts.len() + 1)));
        assert_eq!(handed.get(), bytes.len(), "the first write serializes the whole file once");
        assert_eq!(counted(&parts, &bytes), Ok(Some(1)));
        assert_eq!(handed.get(), 0, "nothing is serialized when the store holds every part");
        // Two parts gone, apart: each is serialized from the nearest resume before it, to
        // its end (in pieces of 10 000 bytes).
        for index in [2, parts.len() - 1] {
            std::fs::remove_file(store.root().join(parts[index].entry_name())).expect("remove");
        }
        assert_eq!(counted(&parts, &bytes), Ok(Some(3)));
        let bound = 2 * (30_000 + 10_000) + usize::try_from(parts[2].length + parts[parts.len() - 1].length).unwrap();
        assert!(handed.get() <= bound, "{} bytes handed over, at most {bound}", handed.get());
        let mut whole = Vec::new();
        for part in &parts {
            whole.extend(std::fs::read(store.root().join(part.entry_name())).expect("part"));
        }
        assert!(whole == bytes);
        // A part changed, or the file longer at its end: refused, no list.
        let mut changed = bytes.clone();
        changed[usize::try_from(parts[0].length + 5).unwrap()] ^= 1;
        for other in [changed, [&bytes[..], b"x"].concat()] {
            for index in [1, parts.len() - 1] {
                let _ = std::fs::remove_file(store.root().join(parts[index].entry_name()));
            }
            let _ = std::fs::remove_file(staging.join("trace.json.parts"));
            assert!(counted(&parts, &other).is_err());
            assert!(!staging.join("trace.json.parts").exists());
        }
    }
}
