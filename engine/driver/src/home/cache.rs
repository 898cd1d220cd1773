//! The persisted fingerprint cache (`<home>/cache/fingerprints`): what every input and
//! output looked like after the last convergence. A repeated run stats them and, when
//! nothing changed, finishes without reading a file body or writing anything. A file
//! whose metadata changed but whose bytes hash the same counts as unchanged. A cache
//! that is corrupt, foreign or from another build is discarded with a warning.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::home::Home;
use crate::home::anchor::{Anchor, Kind};
use crate::home::observe::{Observed, Stat};

pub const CACHE_DIR: &str = "cache";
pub const CACHE_FILE: &str = "fingerprints";
const MAGIC: &str = "acompose-fingerprints 2";

/// How many names a path may have below the anchor in effect before the writer sets a
/// new one (see [`Anchors`]).
const ANCHOR_REACH: usize = 3;

/// The anchors of a cache's text. An entry's path is written relative to the last anchor
/// line (`A\t<folder>`; an empty folder means paths as they were recorded), so that the
/// no-op check opens each anchor once and looks up only the last few names of each path
/// ([`crate::home::anchor`]), and the text is a fraction of its size. A new anchor is the
/// path's grandparent: a skill's folder and its files share the catalogue's.
#[derive(Default)]
struct Anchors {
    current: Option<String>,
}

impl Anchors {
    /// The part of `path` to write, after writing an anchor line when `path` is out of
    /// the current anchor's reach. Pure text: the anchor, a slash and the part are the
    /// path exactly.
    fn place<'p>(&mut self, path: &'p str, out: &mut dyn std::io::Write) -> std::io::Result<&'p str> {
        if let Some(anchor) = &self.current
            && let Some(rest) = path.strip_prefix(anchor.as_str()).and_then(|rest| rest.strip_prefix('/'))
            && !rest.is_empty()
            && !rest.starts_with('/')
            && rest.matches('/').count() < ANCHOR_REACH
        {
            return Ok(rest);
        }
        let cut = path
            .rfind('/')
            .and_then(|last| path[..last].rfind('/'))
            .filter(|&cut| cut > 0 && !path[cut + 1..].starts_with('/'));
        match cut {
            Some(cut) => {
                writeln!(out, "A\t{}", &path[..cut])?;
                self.current = Some(path[..cut].to_owned());
                Ok(&path[cut + 1..])
            }
            None => {
                if self.current.take().is_some() {
                    writeln!(out, "A\t")?;
                }
                Ok(path)
            }
        }
    }
}

/// The path an entry line's `rest` stands for under `anchor` (see [`Anchors`]).
fn anchored(anchor: &str, rest: &str) -> PathBuf {
    if anchor.is_empty() { PathBuf::from(rest) } else { PathBuf::from(format!("{anchor}/{rest}")) }
}

/// What the cache remembers of the last convergence's result, to print the summary again.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    pub source: String,
    pub roles: usize,
    pub personalities: usize,
    pub artifact_files: usize,
    pub bundles: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cache {
    /// The build and settings the cache was made with (binary, embedded roster, projects root).
    pub identity: String,
    pub summary: Summary,
    /// Inputs sorted by path; a list, not a map, because a no-op run only walks it.
    /// Shared with the loader that keeps it up to date between a watch's saves
    /// (`Loader::sorted_observed`).
    pub inputs: std::sync::Arc<Vec<(PathBuf, Observed)>>,
    pub outputs: Vec<(PathBuf, Stat)>,
    /// The stores the outputs link into, each with the folders of its trees they reach.
    pub stores: Vec<StoreRecord>,
}

/// A store as the fingerprints record it. Its entries are immutable and read-only, and
/// an entry is added, removed or renamed only in the store's own folder: when that
/// folder's time and inode are as recorded, its entries are trusted without a look
/// (what changes inside an entry, which takes changing its permissions or being root,
/// is for `acompose verify` to find, and for the next convergence that writes). When
/// the folder moved (a compose or an import added entries, say), every recorded tree
/// folder is checked instead: a tree that lost, gained or renamed a file changed the
/// time of the folder that held it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreRecord {
    pub folder: PathBuf,
    pub stat: Stat,
    /// The folders (its own and any below) of every tree the outputs reach.
    pub trees: Vec<(PathBuf, Stat)>,
}

/// The identity of this build and its settings: a cache made by anything else is foreign.
/// The running executable's size and time stand for the build (a rebuild with the same
/// version may render differently). The projects root counts as the folder it names from
/// the working directory: `watch` works with absolute paths, and a bare run given the
/// same relative `--projects-root` must find the cache a settled watch saved (and one run
/// from another folder must not).
pub fn identity(projects: &Path) -> String {
    let projects = std::path::absolute(projects).unwrap_or_else(|_| projects.to_path_buf());
    let executable = std::env::current_exe()
        .and_then(std::fs::metadata)
        .map(|metadata| Stat::of(&metadata))
        .map_or_else(|_| "unknown".to_owned(), |stat| format!("{}-{}", stat.size, stat.modified_nanos));
    let mut hasher = blake3::Hasher::new();
    for (path, bytes) in acompose_roster::files() {
        hasher.update(path.as_bytes());
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    format!(
        "{} {} {} {}",
        env!("CARGO_PKG_VERSION"),
        executable,
        &hasher.finalize().to_hex()[..16],
        projects.display().to_string().replace(['\n', '\t'], " ")
    )
}

fn hex(bytes: &[u8; 32]) -> impl std::fmt::Display {
    blake3::Hash::from_bytes(*bytes).to_hex()
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    blake3::Hash::from_hex(text).ok().map(|hash| *hash.as_bytes())
}

impl Cache {
    /// Serializes the cache; `None` when a path cannot be written in its line format.
    pub fn to_text(&self) -> Option<String> {
        let mut text = Vec::new();
        self.write_text(&mut text).ok()?;
        String::from_utf8(text).ok()
    }

    /// Writes the cache's text to `out`. Fails with `InvalidData`, having written part of
    /// it, when a path holds a newline or a tab: such a cache is not written at all.
    ///
    /// The text has two sections. The glance section (its length in bytes on the
    /// `glance` line) holds what the no-op check stats and compares: every entry with
    /// its size, time and inode, and the store folders. The detail section, read only
    /// when something moved, holds each file's hash (in the order of the files) and the
    /// folders of the store trees (see [`StoreRecord`]).
    pub fn write_text(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        use std::io::Write as _;
        let unclean = || std::io::Error::from(std::io::ErrorKind::InvalidData);
        writeln!(out, "{MAGIC}")?;
        writeln!(out, "identity\t{}", self.identity)?;
        let summary = &self.summary;
        writeln!(
            out,
            "summary\t{}\t{}\t{}\t{}\t{}",
            summary.source, summary.roles, summary.personalities, summary.artifact_files, summary.bundles
        )?;
        fn clean(path: &Path) -> Option<&str> {
            path.to_str().filter(|text| !text.contains(['\n', '\t']))
        }
        // A missing path whose parent folder is recorded is covered by that folder: making
        // the path changes the folder's time. Such lines (`m`) are not stat'ed by the
        // no-op check.
        let folders: std::collections::HashSet<&Path> = self
            .inputs
            .iter()
            .filter(|(_, observed)| matches!(observed, Observed::Directory(_)))
            .map(|(path, _)| path.as_path())
            .collect();
        // The glance section is measured before it is written: about a megabyte for the
        // reference estate.
        let mut glance: Vec<u8> = Vec::new();
        let mut anchors = Anchors::default();
        for (path, observed) in self.inputs.iter() {
            let covered = path.parent().is_some_and(|parent| folders.contains(parent));
            let path = anchors.place(clean(path).ok_or_else(unclean)?, &mut glance)?;
            match observed {
                Observed::Directory(stat) => {
                    writeln!(glance, "D\t{}\t{}\t{path}", stat.modified_nanos, stat.inode)?;
                }
                Observed::File(stat, _) => {
                    writeln!(glance, "F\t{}\t{}\t{}\t{path}", stat.size, stat.modified_nanos, stat.inode)?;
                }
                Observed::Missing => {
                    writeln!(glance, "{}\t{path}", if covered { "m" } else { "M" })?;
                }
                Observed::Unreachable => {
                    writeln!(glance, "U\t{path}")?;
                }
            }
        }
        for (path, stat) in &self.outputs {
            let path = anchors.place(clean(path).ok_or_else(unclean)?, &mut glance)?;
            writeln!(glance, "O\t{}\t{}\t{}\t{path}", stat.size, stat.modified_nanos, stat.inode)?;
        }
        for store in &self.stores {
            let path = anchors.place(clean(&store.folder).ok_or_else(unclean)?, &mut glance)?;
            writeln!(glance, "S\t{}\t{}\t{path}", store.stat.modified_nanos, store.stat.inode)?;
        }
        writeln!(out, "glance\t{}", glance.len())?;
        out.write_all(&glance)?;
        drop(glance);
        out.write_all(b"detail\n")?;
        for (_, observed) in self.inputs.iter() {
            if let Observed::File(_, digest) = observed {
                writeln!(out, "H\t{}", hex(digest))?;
            }
        }
        let mut anchors = Anchors::default();
        for store in &self.stores {
            out.write_all(b"T\n")?;
            for (path, stat) in &store.trees {
                let path = anchors.place(clean(path).ok_or_else(unclean)?, out)?;
                writeln!(out, "T\t{}\t{}\t{path}", stat.modified_nanos, stat.inode)?;
            }
        }
        out.write_all(b"end\n")
    }

    /// Parses a cache; `Err` with a short reason when it is not one this build wrote.
    pub fn parse(text: &str) -> Result<Cache, &'static str> {
        let (header, glance, detail) = sections(text).ok_or("it is not a fingerprint cache of this format")?;
        let mut cache = Cache::default();
        cache.parse_header(header)?;
        let files = cache.parse_glance(glance)?;
        cache.parse_detail(detail, files)?;
        Ok(cache)
    }

    /// The header section: identity and summary.
    fn parse_header(&mut self, header: &str) -> Result<(), &'static str> {
        for line in header.lines().skip(1) {
            let fields: Vec<&str> = line.split('\t').collect();
            let number = |index: usize| fields.get(index).and_then(|field| field.parse::<u64>().ok());
            match fields.as_slice() {
                ["identity", identity] => self.identity = (*identity).to_owned(),
                ["summary", source, ..] if fields.len() == 6 => {
                    self.summary = Summary {
                        source: (*source).to_owned(),
                        roles: number(2).ok_or("its summary is damaged")? as usize,
                        personalities: number(3).ok_or("its summary is damaged")? as usize,
                        artifact_files: number(4).ok_or("its summary is damaged")? as usize,
                        bundles: number(5).ok_or("its summary is damaged")? as usize,
                    }
                }
                ["glance", _] => {}
                _ => return Err("its header is damaged"),
            }
        }
        Ok(())
    }

    /// The glance section: what a no-op stats. Returns the indices of the recorded files,
    /// whose digests the detail section holds in the same order.
    fn parse_glance(&mut self, glance: &str) -> Result<Vec<usize>, &'static str> {
        let damaged = "a line is damaged";
        let mut anchor = "";
        let mut files = Vec::new();
        let inputs = std::sync::Arc::make_mut(&mut self.inputs);
        for line in glance.lines() {
            let fields: Vec<&str> = line.split('\t').collect();
            let number = |index: usize| fields.get(index).and_then(|field| field.parse::<u64>().ok());
            let nanos = |index: usize| fields.get(index).and_then(|field| field.parse::<i128>().ok());
            let folder = || -> Result<Stat, &'static str> {
                Ok(Stat { size: 0, modified_nanos: nanos(1).ok_or(damaged)?, inode: number(2).ok_or(damaged)? })
            };
            let sized = || -> Result<Stat, &'static str> {
                Ok(Stat {
                    size: number(1).ok_or(damaged)?,
                    modified_nanos: nanos(2).ok_or(damaged)?,
                    inode: number(3).ok_or(damaged)?,
                })
            };
            match fields.as_slice() {
                ["A", folder] => anchor = folder,
                ["D", _, _, path] => inputs.push((anchored(anchor, path), Observed::Directory(folder()?))),
                ["F", _, _, _, path] => {
                    files.push(inputs.len());
                    inputs.push((anchored(anchor, path), Observed::File(sized()?, [0; 32])));
                }
                ["M" | "m", path] => inputs.push((anchored(anchor, path), Observed::Missing)),
                ["U", path] => inputs.push((anchored(anchor, path), Observed::Unreachable)),
                ["O", _, _, _, path] => self.outputs.push((anchored(anchor, path), sized()?)),
                ["S", _, _, path] => {
                    self.stores.push(StoreRecord {
                        folder: anchored(anchor, path),
                        stat: folder()?,
                        trees: Vec::new(),
                    });
                }
                _ => return Err(damaged),
            }
        }
        Ok(files)
    }

    /// The detail section: the recorded files' digests and the store trees' folders.
    fn parse_detail(&mut self, detail: &str, files: Vec<usize>) -> Result<(), &'static str> {
        let damaged = "a line is damaged";
        let mut anchor = "";
        let mut files = files.into_iter();
        let mut store = None;
        let mut lines = detail.lines();
        if lines.next() != Some("detail") {
            return Err(damaged);
        }
        let mut ended = false;
        for line in lines {
            if ended {
                return Err("it has data after its end");
            }
            let fields: Vec<&str> = line.split('\t').collect();
            match fields.as_slice() {
                ["H", digest] => {
                    let index = files.next().ok_or(damaged)?;
                    if let Observed::File(_, recorded) = &mut std::sync::Arc::make_mut(&mut self.inputs)[index].1 {
                        *recorded = unhex(digest).ok_or("a digest is damaged")?;
                    }
                }
                ["A", folder] => anchor = folder,
                ["T"] => {
                    let next = store.map_or(0, |index: usize| index + 1);
                    if next >= self.stores.len() {
                        return Err(damaged);
                    }
                    store = Some(next);
                }
                ["T", modified, inode, path] => {
                    let stat = Stat {
                        size: 0,
                        modified_nanos: modified.parse().map_err(|_| damaged)?,
                        inode: inode.parse().map_err(|_| damaged)?,
                    };
                    let index = store.ok_or("a tree line has no store")?;
                    self.stores[index].trees.push((anchored(anchor, path), stat));
                }
                ["end"] => ended = true,
                _ => return Err(damaged),
            }
        }
        if !ended {
            return Err("it is truncated");
        }
        if files.next().is_some() {
            return Err("a digest is missing");
        }
        Ok(())
    }
}

/// Cuts a cache's text into its header (up to and including the `glance` line), its
/// glance section and the rest; `None` when it has no such shape.
fn sections(text: &str) -> Option<(&str, &str, &str)> {
    if !text.starts_with(MAGIC) || text.as_bytes().get(MAGIC.len()) != Some(&b'\n') {
        return None;
    }
    let mut end = 0;
    let mut length = None;
    for line in text.split_inclusive('\n').take(4) {
        end += line.len();
        if let Some(count) = line.strip_prefix("glance\t") {
            length = count.strip_suffix('\n')?.parse::<usize>().ok();
            break;
        }
    }
    let length = length?;
    let glance = text.get(end..end.checked_add(length)?)?;
    if !(glance.is_empty() || glance.ends_with('\n')) {
        return None;
    }
    Some((&text[..end], glance, &text[end + length..]))
}

/// The result of comparing the cache with the disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Nothing changed; `touched` inputs (by index) changed metadata only (same hash), and
    /// the `stores` (by index) whose folder moved have every recorded tree unchanged.
    Unchanged { touched: Vec<(usize, Observed)>, stores: Vec<(usize, Stat)> },
    /// Something changed; converge.
    Changed,
}

impl Cache {
    /// Takes what an unchanged [`check`] found moved: the new metadata of inputs whose
    /// hash is the same, and the new time of stores whose every tree is as recorded (each
    /// smudged when racily fresh). Whether anything was taken, so that the cache is
    /// written again only then.
    pub fn take_moved(&mut self, touched: Vec<(usize, Observed)>, stores: Vec<(usize, Stat)>) -> bool {
        let moved = !touched.is_empty() || !stores.is_empty();
        let inputs = std::sync::Arc::make_mut(&mut self.inputs);
        for (index, observed) in touched {
            inputs[index].1 = crate::home::observe::smudge_if_racy(observed);
        }
        for (index, stat) in stores {
            self.stores[index].stat = crate::home::observe::smudge_folder_if_racy(stat);
        }
        moved
    }
}

/// Counts for `--stats`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckCounters {
    pub stated: usize,
    pub read: usize,
    pub hashed: usize,
}

/// Stats every recorded input and output (in parallel); hashes only files whose metadata
/// moved.
pub fn check(cache: &Cache, counters: &mut CheckCounters) -> Check {
    counters.stated = cache.inputs.len() + cache.outputs.len() + cache.stores.len();
    let outputs_ok = cache.outputs.par_iter().all(|(path, recorded)| {
        std::fs::symlink_metadata(path).is_ok_and(|metadata| is_output(&metadata) && Stat::of(&metadata) == *recorded)
    });
    if !outputs_ok {
        return Check::Changed;
    }
    // A store's folder, or one of its entries: a tree's folder, or a part's file.
    let entry_as_recorded = |path: &Path, recorded: &Stat, file_too: bool| {
        std::fs::symlink_metadata(path)
            .ok()
            .filter(|metadata| metadata.is_dir() || (file_too && metadata.is_file()))
            .map(|metadata| {
                let now = Stat::of(&metadata);
                (now.modified_nanos == recorded.modified_nanos && now.inode == recorded.inode, now)
            })
    };
    let mut stores = Vec::new();
    for (index, store) in cache.stores.iter().enumerate() {
        match entry_as_recorded(&store.folder, &store.stat, false) {
            Some((true, _)) => {}
            Some((false, now)) => {
                counters.stated += store.trees.len();
                if !store
                    .trees
                    .par_iter()
                    .all(|(entry, recorded)| entry_as_recorded(entry, recorded, true).is_some_and(|(same, _)| same))
                {
                    return Check::Changed;
                }
                stores.push((index, now));
            }
            None => return Check::Changed,
        }
    }
    enum Verdict {
        Same,
        Suspect(usize, [u8; 32]),
        Changed,
    }
    let verdicts: Vec<Verdict> = cache
        .inputs
        .par_iter()
        .enumerate()
        .map(|(index, (path, recorded))| match (recorded, std::fs::symlink_metadata(path)) {
            (Observed::Missing | Observed::Unreachable, Err(_)) => Verdict::Same,
            (Observed::Missing | Observed::Unreachable, Ok(_)) => Verdict::Changed,
            (Observed::Directory(stat), Ok(metadata)) if metadata.is_dir() && !metadata.file_type().is_symlink() => {
                let now = Stat::of(&metadata);
                if now.modified_nanos == stat.modified_nanos && now.inode == stat.inode {
                    Verdict::Same
                } else {
                    Verdict::Changed
                }
            }
            (Observed::File(stat, digest), Ok(metadata)) if metadata.is_file() => {
                if Stat::of(&metadata) == *stat {
                    Verdict::Same
                } else {
                    Verdict::Suspect(index, *digest)
                }
            }
            _ => Verdict::Changed,
        })
        .collect();
    let mut touched = Vec::new();
    for verdict in verdicts {
        match verdict {
            Verdict::Same => {}
            Verdict::Changed => return Check::Changed,
            Verdict::Suspect(index, digest) => {
                counters.read += 1;
                counters.hashed += 1;
                let path = &cache.inputs[index].0;
                let Ok(metadata) = std::fs::symlink_metadata(path) else { return Check::Changed };
                let Ok(bytes) = std::fs::read(path) else { return Check::Changed };
                let now = *blake3::hash(&bytes).as_bytes();
                if now != digest {
                    return Check::Changed;
                }
                touched.push((index, Observed::File(Stat::of(&metadata), now)));
            }
        }
    }
    Check::Unchanged { touched, stores }
}

/// Reads `<home>/cache/fingerprints`: `Ok(None)` when there is none, `Err` with the
/// reason for a warning when it cannot be used.
pub fn read(home: &Home) -> Result<Option<String>, String> {
    read_named(home, CACHE_FILE)
}

/// [`read`] of another cache file in `<home>/cache` (a composition's).
pub fn read_named(home: &Home, name: &str) -> Result<Option<String>, String> {
    let Some(path) = cache_file(home, name)? else { return Ok(None) };
    std::fs::read_to_string(&path).map(Some).map_err(|_| "it cannot be read as text".to_owned())
}

/// The path of `<home>/cache/<name>`: `Ok(None)` when there is none, `Err` when it is
/// not a regular file.
fn cache_file(home: &Home, name: &str) -> Result<Option<PathBuf>, String> {
    let path = home.cache().join(name);
    match std::fs::symlink_metadata(&path) {
        Err(_) => Ok(None),
        Ok(metadata) if !metadata.is_file() => Err("it is not a regular file".to_owned()),
        Ok(_) => Ok(Some(path)),
    }
}

/// Reads what the no-op check needs of `<home>/cache/<name>`: its header and glance
/// section, not the detail behind them (the hashes and the store trees, about half of
/// the file). `Ok(None)` when there is none; a text that is not a cache of this format is
/// returned as it is, for [`unchanged_at_a_glance`] to refuse.
pub fn read_glance_named(home: &Home, name: &str) -> Result<Option<String>, String> {
    use std::io::Read as _;
    let Some(path) = cache_file(home, name)? else { return Ok(None) };
    let unreadable = |_| "it cannot be read as text".to_owned();
    let mut file = std::fs::File::open(&path).map_err(unreadable)?;
    // The header is four short lines (the identity holds the projects root's path).
    let mut bytes = Vec::new();
    (&mut file).take(64 * 1024).read_to_end(&mut bytes).map_err(unreadable)?;
    let header: Option<usize> = {
        let mut end = 0;
        let mut found = None;
        for line in bytes.split_inclusive(|&byte| byte == b'\n').take(4) {
            end += line.len();
            if let Some(count) = line.strip_prefix(b"glance\t") {
                found = std::str::from_utf8(count).ok().and_then(|count| count.trim_end().parse::<usize>().ok());
                break;
            }
        }
        found.and_then(|length| end.checked_add(length))
    };
    match header {
        Some(wanted) if wanted > bytes.len() => {
            let more = (wanted - bytes.len()) as u64;
            (&mut file).take(more).read_to_end(&mut bytes).map_err(unreadable)?;
        }
        Some(wanted) => bytes.truncate(wanted),
        // No header in the first 64 KiB (a very long identity, or not a cache): all of it.
        None => {
            file.read_to_end(&mut bytes).map_err(unreadable)?;
        }
    }
    String::from_utf8(bytes).map(Some).map_err(|_| "it cannot be read as text".to_owned())
}

/// Parses a cache read by [`read`]; `Err` with the reason for a warning.
pub fn parse_for(text: &str, identity: &str) -> Result<Cache, String> {
    match Cache::parse(text) {
        Ok(cache) if cache.identity == identity => Ok(cache),
        Ok(_) => Err("another build or projects root wrote it".to_owned()),
        Err(reason) => Err(reason.to_owned()),
    }
}

/// The no-op fast path: checks every entry straight from the text, in parallel and
/// without building the cache, and answers the summary when every input and output has
/// exactly its recorded metadata. `None` means "look closer" (something moved, or the
/// text is not a cache this build wrote).
pub fn unchanged_at_a_glance(text: &str, identity: &str, counters: &mut CheckCounters) -> Option<Summary> {
    unchanged_at_a_glance_with(text, &[], identity, counters)
}

/// [`unchanged_at_a_glance`] of a base followed by the records of its log: an entry a
/// record names is checked as the last record says, and the summary is the last one's.
pub fn unchanged_at_a_glance_with(
    text: &str,
    log: &[crate::home::cache_log::Delta],
    identity: &str,
    counters: &mut CheckCounters,
) -> Option<Summary> {
    let logged = crate::home::cache_log::Logged::of(log);
    let (header, body, _) = sections(text)?;
    let mut lines = header.lines().skip(1);
    if lines.next() != Some(&format!("identity\t{identity}")) {
        return None;
    }
    let summary_line = lines.next().filter(|line| line.starts_with("summary\t"))?;
    let summary = match log.last() {
        Some(last) => last.summary().clone(),
        None => {
            Cache::parse(&format!("{MAGIC}\nidentity\t{identity}\n{summary_line}\nglance\t0\ndetail\nend\n"))
                .ok()?
                .summary
        }
    };
    let pieces = pieces_at_anchors(body, 64);
    // The recorded numbers are compared as text: formatting what the disk says is
    // several times cheaper than parsing what the cache says.
    let equal = |now: &Stat, size: Option<&str>, nanos: &str, inode: &str| {
        let mut buffer = itoa::Buffer::new();
        size.is_none_or(|size| buffer.format(now.size) == size)
            && buffer.format(now.modified_nanos) == nanos
            && buffer.format(now.inode) == inode
    };
    let same = |anchor: &Anchor<'_>, line: &str| -> bool {
        // At most five fields; a fixed array keeps this hot loop free of allocation.
        let mut buffer = [""; 5];
        let mut count = 0;
        for field in line.splitn(5, '\t') {
            buffer[count] = field;
            count += 1;
        }
        match &buffer[..count] {
            // A listed folder, or a store's folder (its trees are trusted while it is
            // unchanged: see `StoreRecord`).
            ["D" | "S", nanos, inode, path] => {
                anchor.lstat(path).is_some_and(|(kind, now)| kind == Kind::Folder && equal(&now, None, nanos, inode))
            }
            ["F", size, nanos, inode, path] => anchor
                .lstat(path)
                .is_some_and(|(kind, now)| kind == Kind::File && equal(&now, Some(size), nanos, inode)),
            ["O", size, nanos, inode, path] => anchor
                .lstat(path)
                .is_some_and(|(kind, now)| kind != Kind::Other && equal(&now, Some(size), nanos, inode)),
            ["M" | "U", path] => anchor.lstat(path).is_none(),
            // Covered by its recorded parent folder.
            ["m", _] => true,
            _ => false,
        }
    };
    let checked: Option<Vec<usize>> = pieces
        .par_iter()
        .map(|piece| {
            // Every piece but the first begins with its anchor line.
            let mut anchor = Anchor::Working;
            let mut folder = "";
            let mut lines = 0;
            for line in piece.strip_suffix('\n').unwrap_or(piece).split('\n') {
                if let Some(name) = line.strip_prefix("A\t") {
                    anchor = Anchor::open(name);
                    folder = name;
                } else if logged.names(folder, line) {
                    // The log says what this entry is now; checked below.
                } else if !same(&anchor, line) {
                    return None;
                } else {
                    lines += usize::from(!line.starts_with("m\t"));
                }
            }
            Some(lines)
        })
        .collect();
    counters.stated = checked?.iter().sum::<usize>() + logged.check()?;
    Some(summary)
}

/// Cuts `text` (whole lines) into about `count` pieces; each piece but the first begins
/// with an anchor line, so that it can be checked on its own. A text without anchors is
/// one piece.
fn pieces_at_anchors(text: &str, count: usize) -> Vec<&str> {
    let size = text.len().div_ceil(count.max(1)).max(1);
    let mut pieces = Vec::with_capacity(count);
    let mut rest = text;
    while !rest.is_empty() {
        // The next anchor line beginning after `size` bytes (a newline byte is always a
        // character boundary, so the search starts at one).
        let newline = rest.as_bytes().get(size - 1..).and_then(|tail| tail.iter().position(|&byte| byte == b'\n'));
        let cut = match newline.and_then(|offset| rest[size - 1 + offset..].find("\nA\t").map(|at| size + offset + at))
        {
            Some(cut) => cut,
            None => rest.len(),
        };
        let (piece, tail) = rest.split_at(cut);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// Writes the cache atomically (`atomic::replace`). A failure is returned as the warning
/// to show (the cache only saves time; the temporary never stays behind).
/// The log of the base it replaces ([`crate::home::cache_log`]) is removed first: a log
/// never outlives its base, and a kill between the two leaves the older base, which only
/// costs the next run a convergence.
pub fn store(home: &Home, cache: &Cache, hooks: &mut dyn crate::home::transaction::Hooks) -> Result<(), String> {
    remove_log(home)?;
    write_named(home, CACHE_FILE, &mut |out| cache.write_text(out), hooks)
}

fn remove_log(home: &Home) -> Result<(), String> {
    let log = home.cache().join(crate::home::cache_log::LOG_FILE);
    match std::fs::remove_file(&log) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(format!(
            "cannot save the fingerprint cache: `{}` cannot be removed: {}; the next run converges in full",
            log.display(),
            crate::error::error_kind(&error)
        )),
        _ => Ok(()),
    }
}

/// Removes the fingerprint cache, so the next bare run converges in full (a convergence
/// that warned, whose warnings must be shown again). A cache that cannot be removed is
/// left: the next run still checks it and, finding the warning's input unchanged, says
/// so.
pub fn forget(home: &Home) {
    let _ = std::fs::remove_file(home.cache().join(crate::home::cache_log::LOG_FILE));
    let _ = std::fs::remove_file(home.cache().join(CACHE_FILE));
}

/// Writes a cache as `<home>/cache/<name>`; any failure writes nothing (a composition's
/// cache only saves time).
pub fn store_cache_named(home: &Home, name: &str, cache: &Cache) {
    let _ = write_named(home, name, &mut |out| cache.write_text(out), &mut crate::home::transaction::NoFaults);
}

/// Writes `bytes` as `<home>/cache/<name>` atomically; `None` or any failure writes
/// nothing (a composition's cache only saves time, and its compose still succeeded).
pub fn store_named(home: &Home, name: &str, bytes: Option<&[u8]>) {
    if let Some(bytes) = bytes {
        let _ = write_named(home, name, &mut |out| out.write_all(bytes), &mut crate::home::transaction::NoFaults);
    }
}

/// Writes `bytes` as `<home>/cache/<name>` atomically, refusing a linked cache folder.
/// A cache path with a newline or a tab (`InvalidData` from the writer) is not an error:
/// no cache is written and the next run converges in full.
fn write_named(
    home: &Home,
    name: &str,
    write: &mut dyn FnMut(&mut dyn std::io::Write) -> std::io::Result<()>,
    hooks: &mut dyn crate::home::transaction::Hooks,
) -> Result<(), String> {
    let directory = home.cache();
    let problem = |error: &std::io::Error| {
        format!(
            "cannot save the fingerprint cache in `{}`: {}; the next run converges in full",
            directory.display(),
            crate::error::error_kind(error)
        )
    };
    if std::fs::symlink_metadata(&directory).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
        return Err(format!(
            "cannot save the fingerprint cache: `{}` is a symbolic link; the next run converges in full",
            directory.display()
        ));
    }
    std::fs::create_dir_all(&directory).map_err(|error| problem(&error))?;
    let target = directory.join(name);
    hooks.before(crate::home::transaction::Step::WriteTemporary(&target)).map_err(|error| problem(&error))?;
    // The temporary is removed when the write fails (it is dropped unpersisted).
    match crate::home::atomic::replace_with(&directory, name, write) {
        Ok(()) => Ok(()),
        Err(error) if error.cause.as_ref().is_some_and(|cause| cause.kind() == std::io::ErrorKind::InvalidData) => {
            Ok(())
        }
        Err(error) => Err(match &error.cause {
            Some(cause) => problem(cause),
            None => format!("{}; the next run converges in full", error.message),
        }),
    }
}

/// An output is a file or a folder (a bundle's, or a store tree's: see [`entry_stat`]).
fn is_output(metadata: &std::fs::Metadata) -> bool {
    metadata.is_file() || metadata.is_dir()
}

/// Records a store tree by its folders (the tree's own and any below it): one that
/// loses, gains or renames a file changes the time of the folder that held it. A file
/// edited in place inside one (which takes changing its permissions first) is for
/// `verify` to find; stat'ing every file of every tree would make the check a third
/// longer.
///
/// A folder with a link count of 2 has no folder inside it (its own entry and its `.`,
/// on every file system that counts a folder's `..` entries, as ext4, XFS and tmpfs do):
/// such a tree is recorded by one `stat`, without listing it. Any other count (a folder
/// with folders inside, or a file system that reports 1) lists the tree.
pub fn entry_stat(entry: &Path, into: &mut Vec<(PathBuf, Stat)>) {
    use std::os::unix::fs::MetadataExt as _;
    match std::fs::symlink_metadata(entry) {
        Ok(metadata) if metadata.is_dir() && metadata.nlink() == 2 => {
            into.push((entry.to_path_buf(), Stat::of(&metadata)));
            return;
        }
        Ok(metadata) if metadata.is_dir() => {}
        // A part of a parted file: the entry is the file.
        Ok(metadata) if metadata.is_file() => {
            into.push((entry.to_path_buf(), Stat::of(&metadata)));
            return;
        }
        _ => return,
    }
    for folder in walkdir::WalkDir::new(entry).follow_links(false).into_iter().flatten() {
        if folder.file_type().is_dir()
            && let Ok(metadata) = folder.metadata()
        {
            into.push((folder.path().to_path_buf(), Stat::of(&metadata)));
        }
    }
}

/// Stats every file and folder under `root` (recursively, `root` included) as output
/// fingerprints: a file lost, added or replaced (a link repointed, say) changes one of
/// them.
pub fn output_stats(root: &Path, into: &mut Vec<(PathBuf, Stat)>) {
    for entry in walkdir::WalkDir::new(root).follow_links(false).into_iter().flatten() {
        if (entry.file_type().is_file() || entry.file_type().is_dir())
            && let Ok(metadata) = entry.metadata()
        {
            into.push((entry.path().to_path_buf(), Stat::of(&metadata)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_damage() {
        let mut cache = Cache { identity: "x 1 /p".to_owned(), ..Cache::default() };
        cache.summary =
            Summary { source: "roster:core".to_owned(), roles: 7, personalities: 10, artifact_files: 25, bundles: 0 };
        std::sync::Arc::make_mut(&mut cache.inputs)
            .push((PathBuf::from("/a"), Observed::Directory(Stat { size: 0, modified_nanos: 1, inode: 2 })));
        let file = Observed::File(Stat { size: 3, modified_nanos: -5, inode: 9 }, [7; 32]);
        std::sync::Arc::make_mut(&mut cache.inputs).push((PathBuf::from("/a/b"), file));
        std::sync::Arc::make_mut(&mut cache.inputs).push((PathBuf::from("/gone"), Observed::Missing));
        cache.outputs.push((PathBuf::from("/o"), Stat { size: 1, modified_nanos: 2, inode: 3 }));
        let folder = |nanos: i128| Stat { size: 0, modified_nanos: nanos, inode: 4 };
        for name in ["/h/store", "/h/other-store"] {
            cache.stores.push(StoreRecord {
                folder: PathBuf::from(name),
                stat: folder(5),
                trees: vec![(PathBuf::from(format!("{name}/tree")), folder(6)), (PathBuf::from("/t/u/v/w"), folder(7))],
            });
        }
        std::sync::Arc::make_mut(&mut cache.inputs)
            .push((PathBuf::from("/a/b/c"), Observed::File(Stat { size: 8, modified_nanos: 9, inode: 10 }, [1; 32])));
        let text = cache.to_text().expect("text");
        assert_eq!(Cache::parse(&text), Ok(cache.clone()));
        // The glance section holds no hash and no tree.
        let (_, glance, detail) = sections(&text).expect("sections");
        assert!(!glance.contains(&hex(&[7; 32]).to_string()) && !glance.contains("\nT\t"), "{glance}");
        assert!(detail.contains(&hex(&[7; 32]).to_string()) && detail.contains("\nT\t"), "{detail}");
        // A missing, a surplus or a damaged hash, a bad length: refused.
        let first = format!("H\t{}\n", hex(&[7; 32]));
        assert!(Cache::parse(&text.replacen(&first, "", 1)).is_err());
        assert!(Cache::parse(&text.replacen(&first, &format!("{first}{first}"), 1)).is_err());
        assert!(Cache::parse(&text.replacen(&first, "H\tnot-hex\n", 1)).is_err());
        let length = format!("glance\t{}\n", glance.len());
        assert!(Cache::parse(&text.replacen(&length, &format!("glance\t{}\n", glance.len() - 1), 1)).is_err());
        assert!(Cache::parse(&text.replacen(&length, "glance\t99999999999\n", 1)).is_err());
        // More tree lists than stores.
        assert!(Cache::parse(&text.replacen("end\n", "T\nend\n", 1)).is_err());
        assert!(Cache::parse(&text.replace("end\n", "")).is_err());
        assert!(Cache::parse("garbage").is_err());
        assert!(Cache::parse(&text.replace("\tF\t", "\tX\t").replace("F\t3", "F\tthree")).is_err());
    }

    #[test]
    fn the_glance_reads_the_header_and_glance_section_only() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let home = Home::at(temporary.path());
        let mut cache = Cache { identity: "test".to_owned(), ..Cache::default() };
        let long = "x".repeat(70_000);
        for index in 0..3_000 {
            let stat = Stat { size: 1, modified_nanos: index, inode: 2 };
            std::sync::Arc::make_mut(&mut cache.inputs)
                .push((PathBuf::from(format!("/estate/{index}/file")), Observed::File(stat, [3; 32])));
        }
        for identity in ["test".to_owned(), long] {
            cache.identity = identity;
            store_cache_named(&home, "named", &cache);
            let whole = read_named(&home, "named").expect("read").expect("there");
            let glance = read_glance_named(&home, "named").expect("read").expect("there");
            let (header, section, _) = sections(&whole).expect("sections");
            if header.len() < 64 * 1024 {
                assert_eq!(glance, format!("{header}{section}"));
                assert!(whole.len() > glance.len() + 3_000 * 64);
            } else {
                assert_eq!(glance, whole, "a header past 64 KiB: the whole file");
            }
        }
        std::fs::write(home.cache().join("other"), "not a cache\n").expect("write");
        assert_eq!(read_glance_named(&home, "other").expect("read").as_deref(), Some("not a cache\n"));
        assert_eq!(read_glance_named(&home, "absent"), Ok(None));
    }

    #[test]
    fn pieces_begin_at_anchors_and_rejoin() {
        let text: String = (0..500)
            .map(|index| {
                if index % 7 == 3 { format!("A\t/päth/{index}\n") } else { format!("F\t{index}\tünïcode/{index}\n") }
            })
            .collect();
        for count in [1, 7, 64, 10_000] {
            let pieces = pieces_at_anchors(&text, count);
            assert_eq!(pieces.concat(), text);
            assert!(pieces.iter().all(|piece| piece.ends_with('\n')), "{count}");
            assert!(pieces.iter().skip(1).all(|piece| piece.starts_with("A\t")), "{count}");
            assert!(count == 1 || pieces.len() > 1, "{count}");
        }
        assert_eq!(pieces_at_anchors("F\t1\nF\t2\n", 64), ["F\t1\nF\t2\n"]);
        assert!(pieces_at_anchors("", 64).is_empty());
    }

    /// Paths are written relative to anchors, read back whole, and checked from them.
    #[test]
    fn paths_are_written_under_anchors_and_read_back_whole() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let root = temporary.path().join("estate");
        let mut cache = Cache { identity: "test".to_owned(), ..Cache::default() };
        for repository in ["one", "two"] {
            let skills = root.join(repository).join(".agents/skills");
            std::sync::Arc::make_mut(&mut cache.inputs).push((skills.clone(), Observed::Missing));
            for skill in ["a", "b", "c"] {
                let folder = skills.join(skill);
                std::fs::create_dir_all(&folder).expect("mkdir");
                std::fs::write(folder.join("SKILL.md"), skill).expect("write");
                std::sync::Arc::make_mut(&mut cache.inputs)
                    .push((folder.clone(), crate::home::observe::observe(&folder)));
                let file = folder.join("SKILL.md");
                let observed = crate::home::observe::observe(&file);
                std::sync::Arc::make_mut(&mut cache.inputs).push((file, observed));
            }
        }
        for skills in [root.join("one/.agents/skills"), root.join("two/.agents/skills")] {
            let index = cache.inputs.iter().position(|(path, _)| *path == skills).expect("recorded");
            std::sync::Arc::make_mut(&mut cache.inputs)[index].1 = crate::home::observe::observe(&skills);
        }
        std::sync::Arc::make_mut(&mut cache.inputs).push((PathBuf::from("short"), Observed::Missing));
        std::sync::Arc::make_mut(&mut cache.inputs)
            .push((root.join("one/.agents/skills/a/../b//SKILL.md"), Observed::Missing));
        cache.outputs.push((root.join("one/.agents/skills/a/SKILL.md"), {
            let metadata = std::fs::metadata(root.join("one/.agents/skills/a/SKILL.md")).expect("stat");
            Stat::of(&metadata)
        }));
        let text = cache.to_text().expect("text");
        let skills = root.join("one/.agents/skills");
        assert!(text.contains(&format!("A\t{}\n", skills.display())), "{text}");
        assert!(text.contains("\ta/SKILL.md\n") && text.contains("\tb\n"), "{text}");
        assert!(text.contains("A\t\nM\tshort\n"), "{text}");
        let parsed = Cache::parse(&text).expect("parse");
        // A folder's size is not recorded.
        let mut sizeless = cache.clone();
        for (_, observed) in std::sync::Arc::make_mut(&mut sizeless.inputs) {
            if let Observed::Directory(stat) = observed {
                stat.size = 0;
            }
        }
        assert_eq!(parsed, sizeless);
        let written: Vec<String> = parsed.inputs.iter().map(|(path, _)| path.display().to_string()).collect();
        let recorded: Vec<String> = cache.inputs.iter().map(|(path, _)| path.display().to_string()).collect();
        assert_eq!(written, recorded, "the very same text, not just the same components");
        let mut counters = CheckCounters::default();
        // The odd path exists (`a/../b//SKILL.md` is `b/SKILL.md`): not unchanged.
        assert!(unchanged_at_a_glance(&text, "test", &mut counters).is_none());
        std::sync::Arc::make_mut(&mut cache.inputs).retain(|(path, _)| !path.to_string_lossy().contains(".."));
        let text = cache.to_text().expect("text");
        assert!(unchanged_at_a_glance(&text, "test", &mut counters).is_some());
        assert_eq!(counters.stated, cache.inputs.len() + cache.outputs.len());
        // A file changed below an anchor is seen from it.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(root.join("two/.agents/skills/c/SKILL.md"), "changed").expect("write");
        assert!(unchanged_at_a_glance(&text, "test", &mut CheckCounters::default()).is_none());
        // An anchor that is gone fails every existing entry below it.
        std::fs::write(root.join("two/.agents/skills/c/SKILL.md"), "c").expect("write");
        std::fs::remove_dir_all(root.join("one")).expect("remove");
        assert!(unchanged_at_a_glance(&text, "test", &mut CheckCounters::default()).is_none());
    }

    #[test]
    fn a_missing_path_is_covered_by_its_recorded_folder() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let folder = temporary.path().join("folder");
        std::fs::create_dir(&folder).expect("mkdir");
        let observe = |path: &Path| crate::home::observe::observe(path);
        let mut cache = Cache { identity: "test".to_owned(), ..Cache::default() };
        std::sync::Arc::make_mut(&mut cache.inputs).push((folder.clone(), observe(&folder)));
        std::sync::Arc::make_mut(&mut cache.inputs).push((folder.join("later"), Observed::Missing));
        std::sync::Arc::make_mut(&mut cache.inputs).push((temporary.path().join("elsewhere/deep"), Observed::Missing));
        let text = cache.to_text().expect("text");
        let has = |text: &str, kind: &str, tail: &str| {
            text.lines().any(|line| line.strip_prefix(kind).is_some_and(|rest| rest.ends_with(tail)))
        };
        assert!(has(&text, "m\t", "/folder/later"), "{text}");
        assert!(has(&text, "M\t", "/elsewhere/deep"), "{text}");
        let mut counters = CheckCounters::default();
        assert!(unchanged_at_a_glance(&text, "test", &mut counters).is_some());
        assert_eq!(counters.stated, 2, "the covered path is not stat'ed");
        // Making the covered path changes its folder (past the timestamp tick).
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::fs::write(folder.join("later"), "now").expect("write");
        assert!(unchanged_at_a_glance(&text, "test", &mut CheckCounters::default()).is_none());
        assert!(matches!(check(&Cache::parse(&text).expect("parse"), &mut CheckCounters::default()), Check::Changed));
        // A missing path without a recorded folder is stat'ed itself.
        std::fs::remove_file(folder.join("later")).expect("remove");
        let mut cache = Cache::parse(&text).expect("parse");
        std::sync::Arc::make_mut(&mut cache.inputs)[0].1 = observe(&folder);
        let text = cache.to_text().expect("text");
        assert!(unchanged_at_a_glance(&text, "test", &mut CheckCounters::default()).is_some());
        std::fs::create_dir_all(temporary.path().join("elsewhere/deep")).expect("mkdir");
        assert!(unchanged_at_a_glance(&text, "test", &mut CheckCounters::default()).is_none());
        // A path that could not be looked at (a folder on the way not searchable) is never
        // covered: making it reachable changes no folder's time.
        let mut cache = Cache { identity: "test".to_owned(), ..Cache::default() };
        std::sync::Arc::make_mut(&mut cache.inputs).push((folder.clone(), observe(&folder)));
        std::sync::Arc::make_mut(&mut cache.inputs).push((folder.join("hidden"), Observed::Unreachable));
        let text = cache.to_text().expect("text");
        assert!(has(&text, "U\t", "/folder/hidden"), "{text}");
        assert_eq!(Cache::parse(&text).expect("parse").inputs[1].1, Observed::Unreachable);
        assert!(unchanged_at_a_glance(&text, "test", &mut CheckCounters::default()).is_some());
        std::fs::write(folder.join("hidden"), "now reachable").expect("write");
        let mut cache = Cache::parse(&text).expect("parse");
        std::sync::Arc::make_mut(&mut cache.inputs)[0].1 = observe(&folder);
        let text = cache.to_text().expect("text");
        assert!(unchanged_at_a_glance(&text, "test", &mut CheckCounters::default()).is_none());
        assert!(matches!(check(&cache, &mut CheckCounters::default()), Check::Changed));
    }
}
