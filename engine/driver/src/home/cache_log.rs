//! The fingerprint cache's log (`<home>/cache/fingerprints.log`): what changed since the
//! cache's base file (`fingerprints`) was written, one record per convergence. A watch
//! edit changes a few dozen of the tens of thousands of entries a cache holds, so it
//! appends those (a few KiB) instead of writing the whole cache again (megabytes on a
//! large estate). The base is written whole again when the log has grown to a
//! sixteenth of its size, when nothing is known of what the files hold, and by every plain
//! [`cache::store`].
//!
//! The log names the base it follows (its size, time and inode as written); a log that
//! follows another base is not read. Each record ends with a line holding the digest of
//! its lines, so a record cut short by a kill, or a tail of zeros after a crash, ends
//! what is read: the cache then describes an earlier state, and the next run finds the
//! change and converges, which is what a cache missing its last save always did.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::home::Home;
use crate::home::cache::{self, CACHE_FILE, Cache, StoreRecord, Summary};
use crate::home::observe::{Observed, Stat};

pub const LOG_FILE: &str = "fingerprints.log";
const LOG_MAGIC: &str = "acompose-fingerprints-log 1";

/// The log is folded into a new base once it is larger than this share of the base
/// (and larger than [`LOG_FLOOR`]): every no-op check reads the whole log, so it stays
/// a few hundred KiB (a skill edit's record is about 2 KB).
const LOG_SHARE: u64 = 16;
const LOG_FLOOR: u64 = 256 * 1024;

/// What the cache files hold, as this process last read or wrote them: what the cache
/// says of each entry, kept small ([`Snapshot`]), and the base's and log's metadata then.
/// A later save appends to the log only while both files are still exactly so.
#[derive(Debug, Clone)]
pub struct Recorded {
    identity: String,
    summary: Summary,
    snapshot: Snapshot,
    base: Stat,
    log: u64,
}

/// The whole cache as read from its base and log, with what [`save`] needs to append to
/// them.
pub struct Read {
    pub cache: Cache,
    base: Stat,
    log: u64,
}

impl Read {
    pub fn into_recorded(self) -> Recorded {
        Recorded::of(&self.cache, self.base, self.log)
    }
}

impl Recorded {
    fn of(cache: &Cache, base: Stat, log: u64) -> Recorded {
        Recorded {
            identity: cache.identity.clone(),
            summary: cache.summary.clone(),
            snapshot: Snapshot::of(cache),
            base,
            log,
        }
    }
}

/// What a cache says of each entry, kept small. Inputs, most of a cache, are a hash of
/// their path and of their value (16 bytes each): a changed or new one is found by those,
/// and one that is gone makes the next save write the cache whole, since its path is not
/// kept. Outputs, stores and trees, a few thousand on a large estate and gone with every
/// replaced bundle, keep their paths, one after another in one buffer.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    inputs: HashMap<u64, u64, Keyed>,
    paths: Vec<u8>,
    entries: HashMap<(Kind, u64), Entry, Keyed>,
    /// How many bytes of `paths` no entry names any more (replaced or removed ones).
    unused: usize,
}

/// The hasher of maps whose keys are hashes already ([`hash_of`]'s): foldhash's fast one.
type Keyed = foldhash::fast::FixedState;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Output,
    Store,
    /// A store's tree: its path is the store's folder, a tab, and the tree's folder.
    Tree,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    value: u64,
    start: usize,
    end: usize,
}

/// A 64-bit hash of a path or a value, kept only in memory: foldhash's quality hash with
/// a fixed seed (about a tenth of the standard library's SipHash's time on a path, and
/// each save hashes every entry of the cache).
fn hash_of(value: impl std::hash::Hash) -> u64 {
    use std::hash::BuildHasher as _;
    foldhash::quality::FixedState::default().hash_one(value)
}

/// Every output, store and tree of `cache` as (kind, path bytes, value hash).
fn entries_of(cache: &Cache) -> impl Iterator<Item = (Kind, std::borrow::Cow<'_, [u8]>, u64)> {
    use std::os::unix::ffi::OsStrExt as _;
    fn bytes(path: &Path) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Borrowed(path.as_os_str().as_bytes())
    }
    let outputs = cache.outputs.iter().map(move |(path, stat)| (Kind::Output, bytes(path), hash_of(stat)));
    let stores =
        cache.stores.iter().map(move |store| (Kind::Store, bytes(&store.folder), hash_of(folder_stat(store.stat))));
    let trees = cache.stores.iter().flat_map(|store| {
        store.trees.iter().map(move |(tree, stat)| {
            (Kind::Tree, std::borrow::Cow::Owned(tree_key(&store.folder, tree)), hash_of(folder_stat(*stat)))
        })
    });
    outputs.chain(stores).chain(trees)
}

/// A tree's path in a [`Snapshot`]: its store's folder, a tab, its own folder.
fn tree_key(store: &Path, tree: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt as _;
    let mut path = store.as_os_str().as_bytes().to_vec();
    path.push(b'\t');
    path.extend_from_slice(tree.as_os_str().as_bytes());
    path
}

fn path_hash(path: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt as _;
    hash_of(path.as_os_str().as_bytes())
}

impl Snapshot {
    fn of(cache: &Cache) -> Snapshot {
        let mut snapshot = Snapshot {
            inputs: cache
                .inputs
                .iter()
                .map(|(path, observed)| (path_hash(path), hash_of(observed.as_written())))
                .collect(),
            ..Snapshot::default()
        };
        for (kind, path, value) in entries_of(cache) {
            let start = snapshot.paths.len();
            snapshot.paths.extend_from_slice(&path);
            let entry = Entry { value, start, end: snapshot.paths.len() };
            snapshot.entries.insert((kind, hash_of(&*path)), entry);
        }
        snapshot.paths.shrink_to_fit();
        snapshot
    }

    /// This snapshot made the snapshot of the cache `delta` leads to, without going
    /// through that cache again: each entry the delta names set or removed. The paths of
    /// replaced and removed entries stay in the buffer until they are half of it (and it
    /// is past 128 KiB).
    fn apply(&mut self, delta: &Delta) {
        use std::os::unix::ffi::OsStrExt as _;
        for (path, observed) in &delta.inputs {
            match observed {
                Some(observed) => self.inputs.insert(path_hash(path), hash_of(observed.as_written())),
                None => self.inputs.remove(&path_hash(path)),
            };
        }
        let outputs = delta.outputs.iter().map(|(path, stat)| (Kind::Output, bytes_of(path), *stat, false));
        let stores = delta.stores.iter().map(|(folder, stat)| (Kind::Store, bytes_of(folder), *stat, true));
        let trees = delta
            .trees
            .iter()
            .map(|(store, tree, stat)| (Kind::Tree, std::borrow::Cow::Owned(tree_key(store, tree)), *stat, true));
        for (kind, path, stat, folder) in outputs.chain(stores).chain(trees) {
            let key = (kind, hash_of(&*path));
            match stat {
                Some(stat) => {
                    let value = hash_of(if folder { folder_stat(stat) } else { stat });
                    let start = self.paths.len();
                    self.paths.extend_from_slice(path.as_ref());
                    let replaced = self.entries.insert(key, Entry { value, start, end: self.paths.len() });
                    self.unused += replaced.map_or(0, |entry| entry.end - entry.start);
                }
                None => {
                    self.unused += self.entries.remove(&key).map_or(0, |entry| entry.end - entry.start);
                }
            }
        }
        if self.paths.len() > (1 << 17) && self.unused > self.paths.len() / 2 {
            let mut paths = Vec::with_capacity(self.paths.len() - self.unused);
            for entry in self.entries.values_mut() {
                let start = paths.len();
                paths.extend_from_slice(&self.paths[entry.start..entry.end]);
                *entry = Entry { value: entry.value, start, end: paths.len() };
            }
            self.paths = paths;
            self.unused = 0;
        }
        fn bytes_of(path: &Path) -> std::borrow::Cow<'_, [u8]> {
            std::borrow::Cow::Borrowed(path.as_os_str().as_bytes())
        }
    }

    /// What changed from this snapshot's cache to `new`; `None` when an input is gone
    /// (its path is not kept, so the record could not name it).
    fn delta(&self, new: &Cache) -> Option<Delta> {
        use std::os::unix::ffi::OsStrExt as _;
        let mut delta = Delta { summary: new.summary.clone(), ..Delta::default() };
        let mut found = 0;
        for (path, observed) in new.inputs.iter() {
            let observed = observed.as_written();
            let known = self.inputs.get(&path_hash(path));
            found += usize::from(known.is_some());
            if known != Some(&hash_of(observed)) {
                delta.inputs.push((path.clone(), Some(observed)));
            }
        }
        if found != self.inputs.len() {
            return None;
        }
        let mut seen: HashSet<(Kind, u64), Keyed> =
            HashSet::with_capacity_and_hasher(self.entries.len(), Keyed::default());
        let mut unchanged = |kind: Kind, path: &[u8], value: u64| {
            let key = (kind, hash_of(path));
            seen.insert(key);
            self.entries
                .get(&key)
                .is_some_and(|entry| entry.value == value && &self.paths[entry.start..entry.end] == path)
        };
        for (path, stat) in &new.outputs {
            if !unchanged(Kind::Output, path.as_os_str().as_bytes(), hash_of(stat)) {
                delta.outputs.push((path.clone(), Some(*stat)));
            }
        }
        for store in &new.stores {
            let stat = folder_stat(store.stat);
            if !unchanged(Kind::Store, store.folder.as_os_str().as_bytes(), hash_of(stat)) {
                delta.stores.push((store.folder.clone(), Some(stat)));
            }
            // A tree's key is its store's folder, a tab and its own folder: made in one buffer.
            let mut key = tree_key(&store.folder, Path::new(""));
            let prefix = key.len();
            for (tree, stat) in &store.trees {
                let stat = folder_stat(*stat);
                key.truncate(prefix);
                key.extend_from_slice(tree.as_os_str().as_bytes());
                if !unchanged(Kind::Tree, &key, hash_of(stat)) {
                    delta.trees.push((store.folder.clone(), tree.clone(), Some(stat)));
                }
            }
        }
        self.removed(&seen, &mut delta);
        Some(delta)
    }

    /// The entries `seen` lacks, as removals, in the order of their paths.
    fn removed(&self, seen: &HashSet<(Kind, u64), Keyed>, delta: &mut Delta) {
        use std::os::unix::ffi::OsStrExt as _;
        let mut gone: Vec<(Kind, &[u8])> = self
            .entries
            .iter()
            .filter(|(key, _)| !seen.contains(key))
            .map(|((kind, _), entry)| (*kind, &self.paths[entry.start..entry.end]))
            .collect();
        gone.sort_unstable_by(|a, b| a.1.cmp(b.1));
        let path = |bytes: &[u8]| PathBuf::from(OsStr::from_bytes(bytes));
        for (kind, bytes) in gone {
            match kind {
                Kind::Output => delta.outputs.push((path(bytes), None)),
                Kind::Store => delta.stores.push((path(bytes), None)),
                Kind::Tree => {
                    if let Some(tab) = bytes.iter().position(|byte| *byte == b'\t') {
                        delta.trees.push((path(&bytes[..tab]), path(&bytes[tab + 1..]), None));
                    }
                }
            }
        }
    }
}

/// One record: the summary after the convergence and the entries it changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delta {
    summary: Summary,
    inputs: Vec<(PathBuf, Option<Observed>)>,
    outputs: Vec<(PathBuf, Option<Stat>)>,
    stores: Vec<(PathBuf, Option<Stat>)>,
    /// (store folder, tree folder, its stat or `None` when it is gone).
    trees: Vec<(PathBuf, PathBuf, Option<Stat>)>,
}

impl Delta {
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty() && self.outputs.is_empty() && self.stores.is_empty() && self.trees.is_empty()
    }

    /// The summary after the record's convergence.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }
}

/// What changed from `old` to `new` (both with one identity).
pub fn delta(old: &Cache, new: &Cache) -> Option<Delta> {
    Snapshot::of(old).delta(new)
}

/// A value as the cache's text keeps it: a folder's size is not recorded (it reads back
/// as 0), so two observations of a folder differ only in time and inode.
trait AsWritten: Copy {
    fn as_written(self) -> Self;
}

impl AsWritten for Observed {
    fn as_written(self) -> Self {
        match self {
            Observed::Directory(stat) => Observed::Directory(folder_stat(stat)),
            other => other,
        }
    }
}

fn folder_stat(stat: Stat) -> Stat {
    Stat { size: 0, ..stat }
}

impl Cache {
    /// Applies one record: the summary, and each entry set or removed.
    pub fn apply(&mut self, delta: &Delta) {
        self.summary = delta.summary.clone();
        apply_sorted(std::sync::Arc::make_mut(&mut self.inputs), &delta.inputs);
        apply_listed(&mut self.outputs, &delta.outputs);
        for (folder, stat) in &delta.stores {
            match (self.stores.iter().position(|store| &store.folder == folder), stat) {
                (Some(index), Some(stat)) => self.stores[index].stat = *stat,
                (Some(index), None) => {
                    self.stores.remove(index);
                }
                (None, Some(stat)) => {
                    self.stores.push(StoreRecord { folder: folder.clone(), stat: *stat, trees: Vec::new() })
                }
                (None, None) => {}
            }
        }
        for store in &mut self.stores {
            let changes: Vec<(PathBuf, Option<Stat>)> = delta
                .trees
                .iter()
                .filter(|(folder, _, _)| *folder == store.folder)
                .map(|(_, tree, stat)| (tree.clone(), *stat))
                .collect();
            apply_listed(&mut store.trees, &changes);
        }
    }
}

/// The entries a log's records name, with the last record's word on each, for the no-op
/// check: a base line naming one of them is passed over, and each is checked as the log
/// says instead.
#[derive(Default)]
pub struct Logged {
    inputs: HashMap<PathBuf, Option<Observed>>,
    outputs: HashMap<PathBuf, Option<Stat>>,
    stores: HashMap<PathBuf, Option<Stat>>,
    /// Every folder above a named path, as text: only a base line under one of these
    /// anchors is looked up.
    folders: HashSet<String>,
}

impl Logged {
    pub fn of(log: &[Delta]) -> Logged {
        let mut logged = Logged::default();
        for delta in log {
            logged.inputs.extend(delta.inputs.iter().cloned());
            logged.outputs.extend(delta.outputs.iter().cloned());
            logged.stores.extend(delta.stores.iter().cloned());
        }
        let paths = logged.inputs.keys().chain(logged.outputs.keys()).chain(logged.stores.keys());
        let folders = paths.flat_map(|path| path.ancestors().skip(1)).filter_map(Path::to_str).map(str::to_owned);
        logged.folders = folders.collect();
        logged
    }

    /// Whether the log names the entry of a base `line` under the anchor `folder` (empty
    /// for paths as recorded).
    pub fn names(&self, folder: &str, line: &str) -> bool {
        if self.inputs.is_empty() && self.outputs.is_empty() && self.stores.is_empty() {
            return false;
        }
        if !folder.is_empty() && !self.folders.contains(folder) {
            return false;
        }
        let (Some(tag), Some(rest)) = (line.split('\t').next(), line.rsplit('\t').next()) else { return false };
        let path = if folder.is_empty() { PathBuf::from(rest) } else { PathBuf::from(format!("{folder}/{rest}")) };
        match tag {
            "O" => self.outputs.contains_key(&path),
            "S" => self.stores.contains_key(&path),
            _ => self.inputs.contains_key(&path),
        }
    }

    /// Stats every entry the log names; how many were stat'ed, or `None` when one is not
    /// as the log says.
    pub fn check(&self) -> Option<usize> {
        let folder_as = |path: &Path, stat: &Stat| {
            std::fs::symlink_metadata(path).ok().is_some_and(|metadata| {
                let now = Stat::of(&metadata);
                metadata.is_dir() && now.modified_nanos == stat.modified_nanos && now.inode == stat.inode
            })
        };
        let mut stated = 0;
        for (path, observed) in &self.inputs {
            let Some(observed) = observed else { continue };
            stated += 1;
            let metadata = std::fs::symlink_metadata(path);
            let same = match (observed, &metadata) {
                (Observed::Missing | Observed::Unreachable, result) => result.is_err(),
                (Observed::Directory(stat), Ok(metadata)) => {
                    !metadata.file_type().is_symlink() && folder_as(path, stat)
                }
                (Observed::File(stat, _), Ok(metadata)) => metadata.is_file() && Stat::of(metadata) == *stat,
                (_, Err(_)) => false,
            };
            if !same {
                return None;
            }
        }
        for (path, stat) in self.outputs.iter().filter_map(|(path, stat)| Some((path, stat.as_ref()?))) {
            stated += 1;
            let metadata = std::fs::symlink_metadata(path).ok()?;
            if !(metadata.is_file() || metadata.is_dir()) || Stat::of(&metadata) != *stat {
                return None;
            }
        }
        for (path, stat) in self.stores.iter().filter_map(|(path, stat)| Some((path, stat.as_ref()?))) {
            stated += 1;
            if !folder_as(path, stat) {
                return None;
            }
        }
        Some(stated)
    }
}

/// Applies changes to a list kept sorted by path (the inputs).
fn apply_sorted<T: Copy>(entries: &mut Vec<(PathBuf, T)>, changes: &[(PathBuf, Option<T>)]) {
    for (path, value) in changes {
        let found = entries.binary_search_by(|(entry, _)| entry.as_os_str().cmp(path.as_os_str()));
        match (found, value) {
            (Ok(index), Some(value)) => entries[index].1 = *value,
            (Ok(index), None) => {
                entries.remove(index);
            }
            (Err(index), Some(value)) => entries.insert(index, (path.clone(), *value)),
            (Err(_), None) => {}
        }
    }
}

/// Applies changes to a list in no particular order (outputs, a store's trees).
fn apply_listed<T: Copy>(entries: &mut Vec<(PathBuf, T)>, changes: &[(PathBuf, Option<T>)]) {
    if changes.is_empty() {
        return;
    }
    let changed: HashMap<&OsStr, Option<T>> = changes.iter().map(|(path, value)| (path.as_os_str(), *value)).collect();
    let mut placed: HashSet<OsString> = HashSet::new();
    entries.retain_mut(|(path, value)| match changed.get(path.as_os_str()) {
        Some(Some(new)) => {
            *value = *new;
            placed.insert(path.as_os_str().to_owned());
            true
        }
        Some(None) => false,
        None => true,
    });
    for (path, value) in changes {
        if let Some(value) = value
            && placed.insert(path.as_os_str().to_owned())
        {
            entries.push((path.clone(), *value));
        }
    }
}

fn hex(bytes: &[u8; 32]) -> String {
    blake3::Hash::from_bytes(*bytes).to_hex().to_string()
}

/// A record's text: `R`, the summary, one line per change, and `E` with the digest.
fn record_text(delta: &Delta) -> Option<Vec<u8>> {
    fn clean(path: &Path) -> Option<&str> {
        path.to_str().filter(|text| !text.contains(['\n', '\t']))
    }
    let mut body = String::new();
    let summary = &delta.summary;
    if summary.source.contains(['\n', '\t']) {
        return None;
    }
    body.push_str(&format!(
        "summary\t{}\t{}\t{}\t{}\t{}\n",
        summary.source, summary.roles, summary.personalities, summary.artifact_files, summary.bundles
    ));
    for (path, observed) in &delta.inputs {
        let path = clean(path)?;
        body.push_str(&match observed {
            Some(Observed::Directory(stat)) => format!("D\t{}\t{}\t{path}\n", stat.modified_nanos, stat.inode),
            Some(Observed::File(stat, digest)) => {
                format!("F\t{}\t{}\t{}\t{}\t{path}\n", stat.size, stat.modified_nanos, stat.inode, hex(digest))
            }
            Some(Observed::Missing) => format!("M\t{path}\n"),
            Some(Observed::Unreachable) => format!("U\t{path}\n"),
            None => format!("-I\t{path}\n"),
        });
    }
    for (path, stat) in &delta.outputs {
        let path = clean(path)?;
        body.push_str(&match stat {
            Some(stat) => format!("O\t{}\t{}\t{}\t{path}\n", stat.size, stat.modified_nanos, stat.inode),
            None => format!("-O\t{path}\n"),
        });
    }
    for (folder, stat) in &delta.stores {
        let folder = clean(folder)?;
        body.push_str(&match stat {
            Some(stat) => format!("S\t{}\t{}\t{folder}\n", stat.modified_nanos, stat.inode),
            None => format!("-S\t{folder}\n"),
        });
    }
    for (folder, tree, stat) in &delta.trees {
        let (folder, tree) = (clean(folder)?, clean(tree)?);
        body.push_str(&match stat {
            Some(stat) => format!("T\t{}\t{}\t{folder}\t{tree}\n", stat.modified_nanos, stat.inode),
            None => format!("-T\t{folder}\t{tree}\n"),
        });
    }
    let digest = blake3::hash(body.as_bytes()).to_hex();
    Some(format!("R\n{body}E\t{}\n", &digest[..16]).into_bytes())
}

/// The header line of a log that follows the base `base`.
fn header(base: &Stat) -> String {
    format!("{LOG_MAGIC}\t{}\t{}\t{}\n", base.size, base.modified_nanos, base.inode)
}

/// The records of a log that follows the base `base`, up to the first one that is cut
/// short or damaged; empty for a log of another base or of another format.
pub fn parse_log(text: &str, base: &Stat) -> Vec<Delta> {
    let Some(rest) = text.strip_prefix(header(base).as_str()) else { return Vec::new() };
    let mut records = Vec::new();
    let mut rest = rest;
    while let Some(body) = rest.strip_prefix("R\n") {
        let Some(end) = body.find("\nE\t").map(|at| at + 1) else { break };
        let (lines, tail) = body.split_at(end);
        let Some((digest, after)) = tail["E\t".len()..].split_once('\n') else { break };
        if blake3::hash(lines.as_bytes()).to_hex()[..16] != *digest {
            break;
        }
        let Some(delta) = parse_record(lines) else { break };
        records.push(delta);
        rest = after;
    }
    records
}

fn parse_record(lines: &str) -> Option<Delta> {
    let mut delta = Delta::default();
    for line in lines.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let number = |index: usize| fields.get(index).and_then(|field| field.parse::<u64>().ok());
        let nanos = |index: usize| fields.get(index).and_then(|field| field.parse::<i128>().ok());
        let folder = |at: usize| Some(Stat { size: 0, modified_nanos: nanos(at)?, inode: number(at + 1)? });
        let sized = || Some(Stat { size: number(1)?, modified_nanos: nanos(2)?, inode: number(3)? });
        let path = |text: &str| PathBuf::from(text);
        match fields.as_slice() {
            ["summary", source, ..] if fields.len() == 6 => {
                delta.summary = Summary {
                    source: (*source).to_owned(),
                    roles: number(2)? as usize,
                    personalities: number(3)? as usize,
                    artifact_files: number(4)? as usize,
                    bundles: number(5)? as usize,
                };
            }
            ["D", _, _, name] => delta.inputs.push((path(name), Some(Observed::Directory(folder(1)?)))),
            ["F", _, _, _, digest, name] => {
                let digest = *blake3::Hash::from_hex(digest).ok()?.as_bytes();
                delta.inputs.push((path(name), Some(Observed::File(sized()?, digest))));
            }
            ["M", name] => delta.inputs.push((path(name), Some(Observed::Missing))),
            ["U", name] => delta.inputs.push((path(name), Some(Observed::Unreachable))),
            ["-I", name] => delta.inputs.push((path(name), None)),
            ["O", _, _, _, name] => delta.outputs.push((path(name), Some(sized()?))),
            ["-O", name] => delta.outputs.push((path(name), None)),
            ["S", _, _, name] => delta.stores.push((path(name), Some(folder(1)?))),
            ["-S", name] => delta.stores.push((path(name), None)),
            ["T", _, _, store, tree] => delta.trees.push((path(store), path(tree), Some(folder(1)?))),
            ["-T", store, tree] => delta.trees.push((path(store), path(tree), None)),
            _ => return None,
        }
    }
    Some(delta)
}

fn stat_of(path: &Path) -> Option<Stat> {
    std::fs::symlink_metadata(path).ok().filter(std::fs::Metadata::is_file).map(|metadata| Stat::of(&metadata))
}

/// The log's text and the base's metadata, for a reader that has the base's text: `None`
/// when there is no log or it cannot be read (the base alone is then the cache).
pub fn read_log(home: &Home) -> Option<(String, Stat)> {
    let base = stat_of(&home.cache().join(CACHE_FILE))?;
    let text = std::fs::read_to_string(home.cache().join(LOG_FILE)).ok()?;
    Some((text, base))
}

/// Reads the whole cache, its base and log applied: `Ok(None)` when there is none; `Err`
/// with the reason for a warning when it cannot be used.
pub fn read(home: &Home, identity: &str) -> Result<Option<Read>, String> {
    let base_path = home.cache().join(CACHE_FILE);
    let Some(text) = cache::read(home)? else { return Ok(None) };
    let base = stat_of(&base_path).ok_or_else(|| "it cannot be read as text".to_owned())?;
    let mut cache = cache::parse_for(&text, identity)?;
    drop(text);
    let log_text = std::fs::read_to_string(home.cache().join(LOG_FILE)).unwrap_or_default();
    for delta in parse_log(&log_text, &base) {
        cache.apply(&delta);
    }
    Ok(Some(Read { cache, base, log: log_text.len() as u64 }))
}

/// Saves `cache`: as a record appended to the log when `previous` says what the files
/// hold now and the log is still small, else as a new base (the log removed first).
/// Returns what the files then hold, or the warning to show.
pub fn save(
    home: &Home,
    cache: &Cache,
    previous: Option<Recorded>,
    hooks: &mut dyn crate::home::transaction::Hooks,
) -> Result<Recorded, String> {
    let log_path = home.cache().join(LOG_FILE);
    let appendable = previous.filter(|previous| {
        previous.identity == cache.identity
            && stat_of(&home.cache().join(CACHE_FILE)) == Some(previous.base)
            && stat_of(&log_path).map_or(0, |stat| stat.size) == previous.log
            && previous.log <= (previous.base.size / LOG_SHARE).max(LOG_FLOOR)
    });
    if let Some(previous) = appendable
        && let Some(delta) = previous.snapshot.delta(cache)
    {
        if delta.is_empty() && delta.summary == previous.summary {
            return Ok(previous);
        }
        if let Some(record) = record_text(&delta) {
            hooks
                .before(crate::home::transaction::Step::WriteTemporary(&log_path))
                .map_err(|error| saving_problem(home, &error))?;
            let mut bytes = if previous.log == 0 { header(&previous.base).into_bytes() } else { Vec::new() };
            bytes.extend_from_slice(&record);
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log_path)
                .and_then(|mut file| file.write_all(&bytes));
            return match appended {
                Ok(()) => {
                    let mut snapshot = previous.snapshot;
                    snapshot.apply(&delta);
                    Ok(Recorded {
                        identity: previous.identity,
                        summary: cache.summary.clone(),
                        snapshot,
                        base: previous.base,
                        log: previous.log + bytes.len() as u64,
                    })
                }
                Err(error) => {
                    // A log cut short ends where its last whole record does; a new base
                    // is the way on.
                    let _ = std::fs::remove_file(&log_path);
                    Err(saving_problem(home, &error))
                }
            };
        }
    }
    cache::store(home, cache, hooks)?;
    let base =
        stat_of(&home.cache().join(CACHE_FILE)).ok_or_else(|| "the fingerprint cache was not saved".to_owned())?;
    Ok(Recorded::of(cache, base, 0))
}

fn saving_problem(home: &Home, error: &std::io::Error) -> String {
    format!(
        "cannot save the fingerprint cache in `{}`: {}; the next run converges in full",
        home.cache().display(),
        crate::error::error_kind(error)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(size: u64, nanos: i128, inode: u64) -> Stat {
        Stat { size, modified_nanos: nanos, inode }
    }

    fn sample() -> Cache {
        Cache {
            identity: "build".to_owned(),
            summary: Summary {
                source: "embedded".to_owned(),
                roles: 2,
                personalities: 1,
                artifact_files: 3,
                bundles: 2,
            },
            inputs: std::sync::Arc::new(vec![
                (PathBuf::from("/p/a"), Observed::Directory(stat(0, 1, 2))),
                (PathBuf::from("/p/a/SKILL.md"), Observed::File(stat(10, 3, 4), [7; 32])),
                (PathBuf::from("/p/b"), Observed::Missing),
            ]),
            outputs: vec![(PathBuf::from("/h/bundles/x/manifest.json"), stat(5, 6, 7))],
            stores: vec![StoreRecord {
                folder: PathBuf::from("/h/store"),
                stat: stat(0, 8, 9),
                trees: vec![(PathBuf::from("/h/store/t1"), stat(0, 10, 11))],
            }],
        }
    }

    #[test]
    fn a_record_applied_to_the_old_cache_gives_the_new_one() {
        let old = sample();
        let mut new = sample();
        new.summary.bundles = 3;
        std::sync::Arc::make_mut(&mut new.inputs)[1].1 = Observed::File(stat(11, 12, 4), [8; 32]);
        std::sync::Arc::make_mut(&mut new.inputs)[2].1 = Observed::Unreachable;
        std::sync::Arc::make_mut(&mut new.inputs).insert(0, (PathBuf::from("/p/0"), Observed::Unreachable));
        new.outputs = vec![(PathBuf::from("/h/bundles/y/manifest.json"), stat(5, 13, 14))];
        new.stores[0].stat = stat(0, 15, 9);
        new.stores[0].trees.push((PathBuf::from("/h/store/t2"), stat(0, 16, 17)));
        let base = stat(100, 1, 1);
        let mut text = header(&base).into_bytes();
        text.extend(record_text(&delta(&old, &new).expect("no input is gone")).expect("a record"));
        let text = String::from_utf8(text).expect("text");
        let records = parse_log(&text, &base);
        assert_eq!(records.len(), 1);
        let mut applied = old.clone();
        applied.apply(&records[0]);
        assert_eq!(applied, new);
        // The log of another base is not read.
        assert!(parse_log(&text, &stat(101, 1, 1)).is_empty());
        // An input gone is not named by a record: the cache is written whole instead.
        let mut fewer = new.clone();
        std::sync::Arc::make_mut(&mut fewer.inputs).remove(1);
        assert!(delta(&new, &fewer).is_none());
    }

    /// A snapshot's inputs (path hash, value hash) and entries (kind, path, value).
    type Triples = (Vec<(u64, u64)>, Vec<(Kind, Vec<u8>, u64)>);

    /// A snapshot as sorted lists, whatever the layout of its buffer.
    fn triples(snapshot: &Snapshot) -> Triples {
        let mut inputs: Vec<(u64, u64)> = snapshot.inputs.iter().map(|(path, value)| (*path, *value)).collect();
        inputs.sort_unstable();
        let mut entries: Vec<(Kind, Vec<u8>, u64)> = snapshot
            .entries
            .iter()
            .map(|((kind, _), entry)| (*kind, snapshot.paths[entry.start..entry.end].to_vec(), entry.value))
            .collect();
        entries.sort_unstable_by(|a, b| a.1.cmp(&b.1).then(a.2.cmp(&b.2)));
        (inputs, entries)
    }

    #[test]
    fn a_snapshot_with_a_delta_applied_is_the_snapshot_of_the_new_cache() {
        let old = sample();
        let mut new = sample();
        std::sync::Arc::make_mut(&mut new.inputs)[1].1 = Observed::File(stat(11, 12, 4), [8; 32]);
        std::sync::Arc::make_mut(&mut new.inputs)[0].1 = Observed::Directory(stat(4096, 30, 2));
        std::sync::Arc::make_mut(&mut new.inputs).insert(0, (PathBuf::from("/p/0"), Observed::Unreachable));
        new.outputs = vec![(PathBuf::from("/h/bundles/y/manifest.json"), stat(5, 13, 14))];
        new.stores[0].stat = stat(4096, 15, 9);
        new.stores[0].trees.push((PathBuf::from("/h/store/t2"), stat(4096, 16, 17)));
        new.stores.push(StoreRecord { folder: PathBuf::from("/elsewhere/store"), stat: stat(0, 1, 1), trees: vec![] });
        let mut snapshot = Snapshot::of(&old);
        let delta = snapshot.delta(&new).expect("no input is gone");
        snapshot.apply(&delta);
        assert_eq!(triples(&snapshot), triples(&Snapshot::of(&new)));
        // Many deltas later the buffer is compacted and still says the same.
        let mut cache = new;
        let mut appended = snapshot.paths.len();
        for round in 0..6000 {
            let mut next = cache.clone();
            let path = PathBuf::from(format!("/h/bundles/{round}/manifest.json"));
            appended += path.as_os_str().len();
            next.outputs = vec![(path, stat(5, round, 1))];
            let delta = snapshot.delta(&next).expect("no input is gone");
            snapshot.apply(&delta);
            cache = next;
        }
        // About 180 KB of paths were appended; compacted past 128 KiB, far fewer are kept.
        assert!(snapshot.paths.len() < appended / 2, "{} of {appended} bytes kept", snapshot.paths.len());
        assert_eq!(triples(&snapshot), triples(&Snapshot::of(&cache)));
    }

    #[test]
    fn a_cache_read_back_from_its_text_differs_from_the_one_in_memory_by_nothing() {
        // In memory a folder has its size; the text does not keep it.
        let mut cache = sample();
        std::sync::Arc::make_mut(&mut cache.inputs)[0].1 = Observed::Directory(stat(4096, 1, 2));
        cache.stores[0].stat = stat(4096, 8, 9);
        cache.stores[0].trees[0].1 = stat(4096, 10, 11);
        let read = Cache::parse(&cache.to_text().expect("text")).expect("parsed");
        assert!(delta(&read, &cache).is_some_and(|delta| delta.is_empty()), "{:?}", delta(&read, &cache));
        assert!(delta(&cache, &read).is_some_and(|delta| delta.is_empty()));
    }

    #[test]
    fn a_record_cut_short_or_damaged_ends_what_is_read() {
        let old = sample();
        let mut new = sample();
        new.summary.roles = 5;
        let base = stat(100, 1, 1);
        let first = record_text(&delta(&old, &new).expect("a delta")).expect("a record");
        let mut newer = new.clone();
        newer.summary.roles = 6;
        let second = record_text(&delta(&new, &newer).expect("a delta")).expect("a record");
        let whole = [header(&base).into_bytes(), first.clone(), second.clone()].concat();
        assert_eq!(parse_log(std::str::from_utf8(&whole).expect("text"), &base).len(), 2);
        for cut in 1..second.len() {
            let text = [header(&base).into_bytes(), first.clone(), second[..cut].to_vec()].concat();
            let text = String::from_utf8_lossy(&text);
            assert_eq!(parse_log(&text, &base).len(), 1, "cut at {cut}");
        }
        let mut damaged = whole.clone();
        let at = header(&base).len() + first.len() + 12;
        damaged[at] ^= 1;
        assert_eq!(parse_log(&String::from_utf8_lossy(&damaged), &base).len(), 1);
    }
}
