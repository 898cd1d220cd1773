//! The content-addressed store on disk: writing skill trees and slices (staged, verified,
//! renamed into place, made read-only, never rewritten), reading them back for `verify`,
//! finding what the bundles of a home reference, and removing the rest (`gc`). Decides
//! no layout (the engine's `store` module does) and writes no bundle folder.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use acompose_engine::store::{
    KEY_DIGITS, SKILLS_PREFIX, StoreSlice, StoreTree, TreeBody, is_slice_name, is_tree_key, names_slice, names_tree,
    slice_key, tree_key,
};

use acompose_engine::parts::{Part, is_part_name};

use crate::compose::load::error_kind;
use crate::home::Home;
use crate::home::observe::Stat;

/// Whether a name in a store folder is an entry's: a tree, a slice or a part.
pub fn is_entry_name(name: &str) -> bool {
    is_tree_key(name) || is_slice_name(name) || is_part_name(name)
}

pub use crate::home::STORE_DIR;
/// The store folder beside bundles composed outside the home.
pub const LOCAL_STORE_DIR: &str = ".store";
/// The name prefix of a store entry being written; never a final entry name.
const STAGING_PREFIX: &str = ".staging-";

/// Distinguishes staging folders of one process.
static STAGING_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// The tree keys of the slices this process wrote or found whole, by slice name. A
/// slice's name is the digest of its links, so what it links is true of any intact entry
/// of that name in any store; the fingerprints of a finished run read it here instead of
/// reading every link back (see [`Store::reachable_known`]). Keys are kept as their 20
/// bytes; a slice linking a tree with a CRLF suffix is not kept.
static SLICE_TREES: std::sync::Mutex<Option<std::collections::HashMap<String, Vec<KeyBytes>>>> =
    std::sync::Mutex::new(None);

/// The numbers (`stat`) the fingerprints recorded of store tree folders, by folder. A
/// tree is never changed once published, so a watch's next save records the same numbers
/// without a `stat` of each of its tens of thousands of trees; an entry this process
/// publishes, sets aside or removes is forgotten. A tree changed by someone else keeps its
/// old numbers in the record, and the next run's check of the store then finds the change
/// (which a fresh `stat` would have recorded as the expected state).
static TREE_STATS: std::sync::Mutex<Option<std::collections::HashMap<PathBuf, Stat>>> = std::sync::Mutex::new(None);

/// At most how many tree folders' numbers [`TREE_STATS`] keeps.
const TREE_STATS_KEPT: usize = 1 << 18;

/// The numbers the fingerprints recorded of a store tree's folder, when known.
pub fn known_tree_stat(folder: &Path) -> Option<Stat> {
    TREE_STATS.lock().ok()?.as_ref()?.get(folder).copied()
}

/// Keeps the numbers of store tree folders the fingerprints recorded.
pub fn remember_tree_stats(stats: impl IntoIterator<Item = (PathBuf, Stat)>) {
    if let Ok(mut known) = TREE_STATS.lock() {
        let known = known.get_or_insert_with(Default::default);
        for (folder, stat) in stats {
            if known.len() >= TREE_STATS_KEPT {
                known.clear();
            }
            known.insert(folder, stat);
        }
    }
}

fn forget_tree_stat(folder: &Path) {
    if let Ok(mut known) = TREE_STATS.lock()
        && let Some(known) = known.as_mut()
    {
        known.remove(folder);
    }
}

/// A short tree key (its [`KEY_DIGITS`] hex digits) as bytes.
type KeyBytes = [u8; KEY_DIGITS / 2];

fn remember_slice(name: &str, skills: &[(String, String)]) {
    let keys: Option<Vec<KeyBytes>> = skills.iter().map(|(_, key)| key_bytes(key)).collect();
    if let (Some(keys), Ok(mut known)) = (keys, SLICE_TREES.lock()) {
        known.get_or_insert_with(Default::default).insert(name.to_owned(), keys);
    }
}

/// Hands each tree key of a slice this process knows to `each`; false when it does not
/// know the slice.
fn each_remembered_tree(name: &str, each: &mut dyn FnMut(&str)) -> bool {
    let Ok(known) = SLICE_TREES.lock() else { return false };
    let Some(keys) = known.as_ref().and_then(|known| known.get(name)) else { return false };
    let mut digits = [0u8; KEY_DIGITS];
    for key in keys {
        each(key_digits(key, &mut digits));
    }
    true
}

/// A short tree key's hex digits, written into `digits`.
fn key_digits<'a>(key: &KeyBytes, digits: &'a mut [u8; KEY_DIGITS]) -> &'a str {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (pair, byte) in digits.chunks_exact_mut(2).zip(key) {
        pair[0] = HEX[usize::from(byte >> 4)];
        pair[1] = HEX[usize::from(byte & 0x0f)];
    }
    std::str::from_utf8(digits).unwrap_or_default()
}

fn key_bytes(key: &str) -> Option<KeyBytes> {
    let digits = key.as_bytes();
    if digits.len() != KEY_DIGITS {
        return None;
    }
    let nibble = |digit: u8| match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    };
    let mut bytes = [0; KEY_DIGITS / 2];
    for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(bytes)
}

/// The writers of this process staging entries in each store now (see
/// [`Store::begin_staging`]).
fn writers() -> std::sync::MutexGuard<'static, std::collections::HashMap<PathBuf, usize>> {
    static WRITERS: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<PathBuf, usize>>> =
        std::sync::OnceLock::new();
    WRITERS.get_or_init(Default::default).lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// This process's id, asked of the system once (each store entry's staging name holds it).
pub(crate) fn process_id() -> u32 {
    static ID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *ID.get_or_init(std::process::id)
}

/// A store folder, and the slices this value wrote or checked whole (with their trees):
/// a live converger (watch mode) does not check them again while they exist.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    known: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    held: Held,
}

/// The bytes of source files a run read and kept for the trees it writes, by blake3:
/// a tree written from them needs no second read of its sources.
#[derive(Clone, Default)]
struct Held(std::sync::Arc<crate::compose::load::HeldSources>);

impl std::fmt::Debug for Held {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "Held({} files)", self.0.len())
    }
}

impl PartialEq for Store {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root
    }
}

impl Eq for Store {}

/// What reading a slice gave: (path inside the provider folder, bytes) of each file
/// read, the problems met, and the skills whose trees were left unread.
pub type SliceRead = (Vec<(String, Vec<u8>)>, Vec<String>, Vec<String>);

/// What one write of an entry did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    New,
    Present,
}

fn cannot(what: &str, path: &Path, error: &std::io::Error) -> String {
    format!("cannot {what} `{}`: {}", path.display(), error_kind(error))
}

/// Gives every folder under `path` (and `path`) its write permission back, so the tree
/// can be removed. Failures are left to the removal to report.
fn make_writable(path: &Path) {
    for entry in walkdir::WalkDir::new(path).follow_links(false).into_iter().flatten() {
        if entry.file_type().is_dir() {
            let _ = std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o755));
        }
    }
}

/// Removes a store entry or a staging folder, read-only folders included (a part is a
/// single file).
fn remove_entry(path: &Path) -> std::io::Result<()> {
    forget_tree_stat(path);
    if std::fs::symlink_metadata(path).is_ok_and(|metadata| !metadata.is_dir()) {
        return std::fs::remove_file(path);
    }
    make_writable(path);
    std::fs::remove_dir_all(path)
}

/// Creates a file read-only (0444) from the start and writes it; the open descriptor
/// stays writable.
fn write_read_only(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o444).open(path)?;
    file.write_all(bytes)
}

/// Makes a staged tree's folders read-only (0555), deepest first; its files were
/// created read-only.
fn seal_folders(staging: &Path, tree: &StoreTree<'_>) -> Result<(), String> {
    let distinct: BTreeSet<PathBuf> = tree
        .files
        .iter()
        .flat_map(|file| {
            Path::new(file.path).ancestors().skip(1).map(|folder| staging.join(folder)).collect::<Vec<_>>()
        })
        .collect();
    let mut folders: Vec<PathBuf> = distinct.into_iter().collect();
    folders.sort_by_key(|folder| std::cmp::Reverse(folder.components().count()));
    for folder in folders {
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555))
            .map_err(|error| cannot("make read-only", &folder, &error))?;
    }
    Ok(())
}

/// The bytes of a file to write: held, or read again from where its source was read (a
/// source that changed since is refused: what is written must be what was composed).
/// A source is read in one call when it is still the size it was composed at.
pub fn body_bytes(body: TreeBody<'_>) -> Result<std::borrow::Cow<'_, [u8]>, String> {
    match body {
        TreeBody::Bytes(bytes) => Ok(std::borrow::Cow::Borrowed(bytes)),
        TreeBody::Source(summarized) => {
            let location = &summarized.location;
            let flags = rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::NOFOLLOW
                | rustix::fs::OFlags::CLOEXEC
                | rustix::fs::OFlags::NONBLOCK;
            let bytes = rustix::fs::openat(rustix::fs::CWD, location, flags, rustix::fs::Mode::empty())
                .and_then(|fd| {
                    crate::compose::load::read_whole(std::os::fd::AsFd::as_fd(&fd), summarized.summary.raw_length)
                })
                .map_err(|error| cannot("read", location, &error.into()))?;
            if blake3::hash(&bytes).as_bytes() != &summarized.raw_digest {
                return Err(format!("`{}` changed while it was being composed; run again", location.display()));
            }
            Ok(std::borrow::Cow::Owned(bytes.to_vec()))
        }
    }
}

/// The relative path from folder `from` to `to`; both absolute and free of `.`/`..`.
pub fn relative_path(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component<'_>> = from.components().collect();
    let to: Vec<Component<'_>> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut path = PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    for component in &to[common..] {
        path.push(component.as_os_str());
    }
    path
}

/// Reads a store skill tree: regular files and folders only, paths relative to the tree.
fn read_tree(path: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(path).follow_links(false).sort_by_file_name() {
        let entry = entry.map_err(|_| format!("store entry `{}` cannot be read", path.display()))?;
        if entry.depth() == 0 {
            if !entry.file_type().is_dir() {
                return Err(format!("store entry `{}` is not a folder", path.display()));
            }
            continue;
        }
        let relative = entry
            .path()
            .strip_prefix(path)
            .unwrap_or(entry.path())
            .components()
            .map(|component| component.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        if entry.file_type().is_file() {
            let bytes = std::fs::read(entry.path()).map_err(|error| cannot("read", entry.path(), &error))?;
            files.push((relative, bytes));
        } else if !entry.file_type().is_dir() {
            return Err(format!("store entry `{}` holds `{relative}`, which is not a regular file", path.display()));
        }
    }
    Ok(files)
}

impl Store {
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Store { root: root.into(), known: std::sync::Arc::default(), held: Held::default() }
    }

    /// This store writing its trees from `held` (source bytes by blake3) where it can,
    /// instead of reading their sources again; [`Store::released`] drops them.
    pub fn holding(self, held: crate::compose::load::HeldSources) -> Self {
        Store { held: Held(std::sync::Arc::new(held)), ..self }
    }

    /// This store without the bytes [`Store::holding`] gave it.
    pub fn released(self) -> Self {
        Store { held: Held::default(), ..self }
    }

    /// The bytes of one file of a tree: held, or as [`body_bytes`] gives them.
    fn tree_body<'a>(&'a self, body: TreeBody<'a>) -> Result<std::borrow::Cow<'a, [u8]>, String> {
        match body {
            // Held bytes hashed to this digest when they were read.
            TreeBody::Source(summarized) => match self.held.0.get(&summarized.raw_digest) {
                Some(bytes) => Ok(std::borrow::Cow::Borrowed(bytes)),
                None => body_bytes(body),
            },
            TreeBody::Bytes(_) => body_bytes(body),
        }
    }

    /// Whether a slice was written or checked whole by this value and is still there (a
    /// slice and its trees leave the store together, never one without the other being
    /// unreferenced).
    pub fn knows_slice(&self, name: &str) -> bool {
        let known = self.known.lock().is_ok_and(|known| known.contains(name));
        known && self.contains(name)
    }

    /// Records a slice written or checked whole, its trees included.
    pub fn know_slice(&self, name: &str) {
        if let Ok(mut known) = self.known.lock() {
            known.insert(name.to_owned());
        }
    }

    /// The store of a home.
    pub fn of_home(home: &Home) -> Self {
        Store::at(home.store())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What the store holds: its entries and the bytes of their regular files (links
    /// not followed). Reads only; a missing store holds nothing.
    pub fn usage(&self) -> Usage {
        let entries = std::fs::read_dir(&self.root).map(|entries| entries.flatten().count()).unwrap_or(0);
        let bytes = walkdir::WalkDir::new(&self.root)
            .into_iter()
            .flatten()
            .filter(|entry| entry.file_type().is_file())
            .filter_map(|entry| entry.metadata().ok())
            .map(|metadata| metadata.len())
            .sum();
        Usage { entries, bytes }
    }

    /// Creates the store folder; refuses one that is a symbolic link.
    pub fn create(&self) -> Result<(), String> {
        if std::fs::symlink_metadata(&self.root).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
            return Err(format!("store `{}` is a symbolic link", self.root.display()));
        }
        std::fs::create_dir_all(&self.root).map_err(|error| cannot("create", &self.root, &error))
    }

    /// The absolute, resolved path of the store (it must exist).
    pub fn canonical(&self) -> Result<PathBuf, String> {
        self.root.canonicalize().map_err(|error| cannot("resolve", &self.root, &error))
    }

    fn staging(&self, name: &str) -> PathBuf {
        let counter = STAGING_COUNTER.fetch_add(1, Ordering::Relaxed);
        self.root.join(format!("{STAGING_PREFIX}{name}-{}-{counter}", process_id()))
    }

    /// The folder the calling thread stages entries in, `.staging-<pid>-<thread>`: one per
    /// writing thread, because making a folder locks the folder it is made in, and two
    /// threads making every staged entry in the store folder itself queue for its lock.
    /// Only the rename into place takes the store folder's.
    fn thread_staging(&self) -> PathBuf {
        let thread = rayon::current_thread_index().map_or_else(|| "main".to_owned(), |index| index.to_string());
        self.root.join(format!("{STAGING_PREFIX}{}-{thread}", process_id()))
    }

    /// Makes a new staging folder for `name` in the calling thread's staging folder (made
    /// when it is missing); returns its path.
    fn make_staging(&self, name: &str) -> Result<PathBuf, String> {
        let counter = STAGING_COUNTER.fetch_add(1, Ordering::Relaxed);
        let parent = self.thread_staging();
        let staging = parent.join(format!("{name}-{counter}"));
        // Another materialization of this process may remove the thread's folder between
        // two entries (`end_staging`): it is made again.
        for _ in 0..3 {
            match std::fs::create_dir(&staging) {
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => match std::fs::create_dir(&parent) {
                    Err(error) if error.kind() != std::io::ErrorKind::AlreadyExists => {
                        return Err(cannot("create", &parent, &error));
                    }
                    _ => {}
                },
                Err(error) => return Err(cannot("create", &staging, &error)),
                Ok(()) => return Ok(staging),
            }
        }
        Err(format!("cannot create `{}`: its folder kept disappearing", staging.display()))
    }

    /// A writer of this process starts staging entries in this store (pair it with
    /// [`Store::end_staging`]): while any does, the threads' staging folders stay.
    pub fn begin_staging(&self) {
        *writers().entry(self.root.clone()).or_default() += 1;
    }

    /// A writer is done staging. The last writer of this process in this store removes
    /// the threads' staging folders it made, when they are empty. (Before: each writer
    /// removed them, and bundles written side by side took a folder away from one another
    /// between two entries, over and over on a busy machine.)
    pub fn end_staging(&self) {
        let mut writers = writers();
        match writers.get_mut(&self.root) {
            Some(count) if *count > 1 => {
                *count -= 1;
                return;
            }
            _ => {
                writers.remove(&self.root);
            }
        }
        // Removed while the writers' table is held, so no writer begins meanwhile.
        let own = format!("{STAGING_PREFIX}{}-", process_id());
        for thread in (0..rayon::current_num_threads()).map(|index| index.to_string()).chain(["main".to_owned()]) {
            let _ = std::fs::remove_dir(self.root.join(format!("{own}{thread}")));
        }
    }

    /// Moves a staged, sealed entry to its final name. Another writer that got there first
    /// wrote the same bytes (the name is their digest), so the staged copy is dropped.
    fn publish(&self, staging: &Path, name: &str) -> Result<Written, String> {
        let target = self.root.join(name);
        forget_tree_stat(&target);
        match std::fs::rename(staging, &target) {
            Ok(()) => Ok(Written::New),
            Err(_) if target.is_dir() => {
                let _ = remove_entry(staging);
                Ok(Written::Present)
            }
            Err(error) => {
                let _ = remove_entry(staging);
                Err(cannot("move a store entry to", &target, &error))
            }
        }
    }

    /// Whether an entry is in place (entries are immutable: its name vouches for it).
    pub fn contains(&self, name: &str) -> bool {
        std::fs::symlink_metadata(self.root.join(name)).is_ok_and(|metadata| metadata.is_dir())
    }

    /// Whether a tree entry holds every file of `tree` at its size (a glance: stats only).
    pub fn tree_looks_intact(&self, tree: &StoreTree<'_>) -> bool {
        let root = self.root.join(&tree.key);
        tree.files.iter().all(|file| {
            std::fs::symlink_metadata(root.join(file.path))
                .is_ok_and(|metadata| metadata.is_file() && metadata.len() == file.length)
        })
    }

    /// Moves a damaged entry out of its name (to a staging name, then removes it): the
    /// one case an entry's name is given to new bytes, which are the bytes it promised.
    fn set_aside(&self, name: &str) -> Result<(), String> {
        let aside = self.staging(&format!("damaged-{name}"));
        let entry = self.root.join(name);
        forget_tree_stat(&entry);
        std::fs::rename(&entry, &aside).map_err(|error| cannot("set aside the damaged store entry", &entry, &error))?;
        let _ = remove_entry(&aside);
        Ok(())
    }

    /// Writes one skill tree unless it is there already. An entry found with a file
    /// missing or of another size is damaged: it is set aside and written again.
    pub fn put_tree(&self, tree: &StoreTree<'_>) -> Result<Written, String> {
        self.put_tree_listed(tree, self.contains(&tree.key))
    }

    /// [`Store::put_tree`] for a caller that listed the store and knows whether the
    /// entry's name is there (`listed`): an entry the listing did not show is written
    /// without being looked for (another writer that gets there first wrote the same
    /// bytes, and the rename finds it).
    pub fn put_tree_listed(&self, tree: &StoreTree<'_>, listed: bool) -> Result<Written, String> {
        if listed {
            if self.tree_looks_intact(tree) {
                return Ok(Written::Present);
            }
            self.set_aside(&tree.key)?;
        }
        // Verified before anything is staged: the bytes to write (held, or read again and
        // compared with the hash they were composed with) must make the entry's name.
        let bodies: Vec<std::borrow::Cow<'_, [u8]>> =
            tree.files.iter().map(|file| self.tree_body(file.body)).collect::<Result<_, _>>()?;
        let pairs: Vec<(&str, &[u8])> =
            tree.files.iter().zip(&bodies).map(|(file, bytes)| (file.path, &**bytes)).collect();
        if tree_key(&pairs) != tree.key {
            return Err(format!("the store entry `{}` failed verification before it was staged", tree.key));
        }
        let staging = self.make_staging(&tree.key)?;
        let staged = (|| -> Result<(), String> {
            for (path, bytes) in &pairs {
                let target = staging.join(path);
                // A file at the tree's top goes into the staging folder just made.
                if let Some(parent) = target.parent().filter(|_| path.contains('/')) {
                    std::fs::create_dir_all(parent).map_err(|error| cannot("create", parent, &error))?;
                }
                write_read_only(&target, bytes).map_err(|error| cannot("write", &target, &error))?;
            }
            seal_folders(&staging, tree)
        })();
        if let Err(error) = staged {
            let _ = remove_entry(&staging);
            return Err(error);
        }
        self.publish(&staging, &tree.key)
    }

    /// Writes one part of a bundle's parted file unless it is there at its size (a part
    /// found at another size is damaged: it is written again over it). The part is
    /// created read-only in the thread's staging folder and renamed to its name; another
    /// writer's rename over it puts the same bytes there.
    pub fn put_part(&self, part: &Part, bytes: &[u8]) -> Result<Written, String> {
        let name = part.entry_name();
        let target = self.root.join(&name);
        if std::fs::symlink_metadata(&target).is_ok_and(|metadata| metadata.is_file() && metadata.len() == part.length)
        {
            return Ok(Written::Present);
        }
        if !part.holds(bytes) {
            return Err(format!("the store entry `{name}` failed verification before it was staged"));
        }
        let staging = self.make_staging(&name)?;
        let file = staging.join("part");
        let staged = write_read_only(&file, bytes).map_err(|error| cannot("write", &file, &error));
        let moved =
            staged.and_then(|()| std::fs::rename(&file, &target).map_err(|error| cannot("move", &file, &error)));
        let _ = remove_entry(&staging);
        moved.map(|()| Written::New)
    }

    /// Whether a part is in place at its size (a glance: one stat).
    pub fn part_looks_intact(&self, part: &Part) -> bool {
        std::fs::symlink_metadata(self.root.join(part.entry_name()))
            .is_ok_and(|metadata| metadata.is_file() && metadata.len() == part.length)
    }

    /// The names in the store folder (entries, and anything else there), listed once.
    pub fn names(&self) -> std::collections::HashSet<String> {
        std::fs::read_dir(&self.root)
            .map(|read| read.flatten().map(|entry| entry.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default()
    }

    /// Writes one slice (a folder of links to trees) unless it is there already.
    pub fn put_slice(&self, slice: &StoreSlice) -> Result<Written, String> {
        self.put_slice_listed(slice, self.contains(&slice.entry_name()))
    }

    /// [`Store::put_slice`] for a caller that listed the store (see
    /// [`Store::put_tree_listed`]). The links are verified before anything is staged: they
    /// must hash to the entry's name, and each names a tree.
    pub fn put_slice_listed(&self, slice: &StoreSlice, listed: bool) -> Result<Written, String> {
        let name = slice.entry_name();
        if listed {
            if self.read_slice_links(&self.root.join(&name)).is_ok_and(|links| links == slice.skills) {
                remember_slice(&name, &slice.skills);
                return Ok(Written::Present);
            }
            self.set_aside(&name)?;
        }
        let well_formed = slice.skills.windows(2).all(|pair| pair[0] < pair[1])
            && slice.skills.iter().all(|(skill, key)| {
                is_tree_key(key) && !skill.is_empty() && !skill.contains('/') && skill != "." && skill != ".."
            });
        if !well_formed || slice_key(&slice.skills) != slice.key {
            return Err(format!("the store entry `{name}` failed verification before it was staged"));
        }
        let staging = self.make_staging(&name)?;
        let staged = (|| -> Result<(), String> {
            for (skill, key) in &slice.skills {
                let link = staging.join(skill);
                std::os::unix::fs::symlink(Path::new("..").join(key), &link)
                    .map_err(|error| cannot("link", &link, &error))?;
            }
            // A slice holds links only: its folder is all there is to make read-only.
            std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o555))
                .map_err(|error| cannot("make read-only", &staging, &error))
        })();
        if let Err(error) = staged {
            let _ = remove_entry(&staging);
            return Err(error);
        }
        let written = self.publish(&staging, &name)?;
        remember_slice(&name, &slice.skills);
        Ok(written)
    }

    /// The (skill, tree key) links of a slice folder; anything else in it is a problem.
    fn read_slice_links(&self, folder: &Path) -> Result<Vec<(String, String)>, String> {
        let entries = std::fs::read_dir(folder).map_err(|error| cannot("read", folder, &error))?;
        let mut links = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|error| cannot("read", folder, &error))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let target = std::fs::read_link(entry.path())
                .map_err(|_| format!("store entry `{}` holds `{name}`, which is not a link", folder.display()))?;
            let mut components = target.components();
            let key = match (components.next(), components.next(), components.next()) {
                (Some(Component::ParentDir), Some(Component::Normal(key)), None) => key.to_string_lossy().into_owned(),
                _ => String::new(),
            };
            if !is_tree_key(&key) {
                return Err(format!(
                    "store entry `{}`: `{name}` links outside the store (`{}`)",
                    folder.display(),
                    target.display()
                ));
            }
            links.push((name, key));
        }
        links.sort();
        Ok(links)
    }

    /// The (skill, tree key) links of a slice entry, which must hash to its name.
    pub fn slice_links(&self, name: &str) -> Result<Vec<(String, String)>, String> {
        let folder = self.root.join(name);
        let links = self.read_slice_links(&folder)?;
        if !names_slice(name, &links) {
            return Err(format!("store entry `{}` is damaged: its links do not hash to its name", folder.display()));
        }
        Ok(links)
    }

    /// The files of a tree entry (path inside the tree, bytes), which must hash to its key.
    pub fn read_tree_entry(&self, key: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
        let folder = self.root.join(key);
        let files = read_tree(&folder)?;
        let pairs: Vec<(&str, &[u8])> = files.iter().map(|(path, bytes)| (path.as_str(), bytes.as_slice())).collect();
        if !names_tree(key, &pairs) {
            return Err(format!("store entry `{}` is damaged: its contents do not hash to its name", folder.display()));
        }
        Ok(files)
    }

    /// Reads a slice and every tree it links, checking each against its name. Returns
    /// (path inside the provider folder, bytes) for every file it could read, and the
    /// problems, each naming the damaged store entry.
    pub fn read_slice(&self, name: &str) -> (Vec<(String, Vec<u8>)>, Vec<String>) {
        let (files, problems, _) = self.read_slice_except(name, &std::collections::HashSet::new());
        (files, problems)
    }

    /// [`Store::read_slice`], leaving unread the trees named in `written` (entries this
    /// process verified before staging them and wrote itself); returns the skills whose
    /// trees it left unread too (one empty name when it left the whole slice unread).
    pub fn read_slice_except(&self, name: &str, written: &std::collections::HashSet<&str>) -> SliceRead {
        // A slice this process verified and wrote (or found whole), all of whose trees it
        // wrote too, is not read back: the empty skill stands for all of them.
        let (mut all_written, mut any) = (true, false);
        if !written.is_empty()
            && each_remembered_tree(name, &mut |key| {
                any = true;
                all_written &= written.contains(key);
            })
            && all_written
            && any
            && self.contains(name)
        {
            return (Vec::new(), Vec::new(), vec![String::new()]);
        }
        let folder = self.root.join(name);
        let links = match self.read_slice_links(&folder) {
            Ok(links) => links,
            Err(problem) => return (Vec::new(), vec![problem], Vec::new()),
        };
        let mut problems = Vec::new();
        if !names_slice(name, &links) {
            problems.push(format!("store entry `{}` is damaged: its links do not hash to its name", folder.display()));
        }
        let mut files = Vec::new();
        let mut skipped = Vec::new();
        for (skill, key) in links {
            if written.contains(key.as_str()) {
                skipped.push(skill);
                continue;
            }
            let tree = self.root.join(&key);
            match read_tree(&tree) {
                Ok(read) => {
                    let pairs: Vec<(&str, &[u8])> =
                        read.iter().map(|(path, bytes)| (path.as_str(), bytes.as_slice())).collect();
                    if !names_tree(&key, &pairs) {
                        problems.push(format!(
                            "store entry `{}` is damaged: its contents do not hash to its name",
                            tree.display()
                        ));
                    }
                    files.extend(read.into_iter().map(|(path, bytes)| (format!("{skill}/{path}"), bytes)));
                }
                Err(problem) => problems.push(problem),
            }
        }
        (files, problems, skipped)
    }

    /// Removes one entry (a tree, a slice or a part) by name.
    pub fn remove(&self, name: &str) -> std::io::Result<()> {
        if !is_entry_name(name) {
            return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
        }
        remove_entry(&self.root.join(name))
    }

    /// Removes every staging folder interrupted writers left in the store. The caller
    /// holds the lock that serializes writers of this store (the home lock for the home's
    /// store), so no staging folder found here is live. Returns how many went.
    pub fn remove_staging(&self) -> usize {
        let Ok(read) = std::fs::read_dir(&self.root) else { return 0 };
        read.flatten()
            .filter(|entry| entry.file_name().as_encoded_bytes().starts_with(STAGING_PREFIX.as_bytes()))
            .filter(|entry| remove_entry(&entry.path()).is_ok())
            .count()
    }

    /// Entry names in the store (trees, slices and parts), and staging folders left behind.
    fn listing(&self) -> (BTreeSet<String>, Vec<String>) {
        let mut entries = BTreeSet::new();
        let mut staging = Vec::new();
        if let Ok(read) = std::fs::read_dir(&self.root) {
            for entry in read.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if is_entry_name(&name) {
                    entries.insert(name);
                } else if name.starts_with(STAGING_PREFIX) {
                    staging.push(name);
                }
            }
        }
        (entries, staging)
    }

    /// The entries a set of referenced slices reaches: the slices and their trees.
    pub fn reachable(&self, slices: &BTreeSet<String>) -> BTreeSet<String> {
        let mut reached = BTreeSet::new();
        for slice in slices {
            reached.insert(slice.clone());
            if is_slice_name(slice)
                && let Ok(links) = self.read_slice_links(&self.root.join(slice))
            {
                reached.extend(links.into_iter().map(|(_, key)| key));
            }
        }
        reached
    }

    /// [`Store::reachable`] for the fingerprints of a run and the prune of its stale
    /// bundles: the trees of a slice this process wrote, found whole or read before are
    /// taken from memory, the others read from their links (and remembered when those
    /// hash to the slice's name). Not for `gc`, which reads every link.
    pub fn reachable_known(&self, slices: &BTreeSet<String>) -> BTreeSet<String> {
        let mut reached = BTreeSet::new();
        for slice in slices {
            reached.insert(slice.clone());
            self.each_tree_of(slice, &mut |key| {
                if !reached.contains(key) {
                    reached.insert(key.to_owned());
                }
            });
        }
        reached
    }

    /// Of `trees`, those a slice of `slices` links, each slice as [`Store::reachable_known`]
    /// finds its trees.
    pub fn trees_linked(&self, slices: &BTreeSet<String>, trees: &BTreeSet<String>) -> BTreeSet<String> {
        let mut linked = BTreeSet::new();
        if trees.is_empty() {
            return linked;
        }
        for slice in slices {
            self.each_tree_of(slice, &mut |key| {
                if let Some(tree) = trees.get(key) {
                    linked.insert(tree.clone());
                }
            });
        }
        linked
    }

    /// Hands each tree key a slice links to `each`: from memory when this process knows
    /// the slice, else from its links, which are remembered when they hash to its name (a
    /// damaged slice's links still count, as [`Store::reachable`] counts them).
    fn each_tree_of(&self, slice: &str, each: &mut dyn FnMut(&str)) {
        if !is_slice_name(slice) || each_remembered_tree(slice, each) {
            return;
        }
        if let Ok(links) = self.read_slice_links(&self.root.join(slice)) {
            if names_slice(slice, &links) {
                remember_slice(slice, &links);
            }
            for (_, key) in &links {
                each(key);
            }
        }
    }

    /// Removes every entry not in `keep` (and staging folders no live writer of this
    /// process owns), or only lists them when `dry_run`. The caller holds the home lock.
    pub fn collect_garbage(&self, keep: &BTreeSet<String>, dry_run: bool) -> Result<Vec<String>, String> {
        let (entries, staging) = self.listing();
        let mut removed = Vec::new();
        let own = format!("-{}-", process_id());
        // A part a bundle's file is a hard link to is held by that link.
        let linked = |name: &str| {
            use std::os::unix::fs::MetadataExt as _;
            is_part_name(name)
                && std::fs::symlink_metadata(self.root.join(name)).is_ok_and(|metadata| metadata.nlink() > 1)
        };
        for name in entries
            .iter()
            .filter(|name| !keep.contains(*name) && !linked(name))
            .chain(staging.iter().filter(|name| !name.contains(&own)))
        {
            if !dry_run {
                remove_entry(&self.root.join(name)).map_err(|error| cannot("remove", &self.root.join(name), &error))?;
            }
            removed.push(name.clone());
        }
        Ok(removed)
    }
}

/// The slice a bundle's provider folder links to, when it is a link into a store:
/// (the store, the slice's entry name). A link that is absolute or lands anywhere but on a
/// slice-shaped name is refused.
pub fn slice_of_link(link: &Path) -> Result<Option<(Store, String)>, String> {
    slice_of_link_resolving(link, &mut std::collections::HashMap::new())
}

/// [`slice_of_link`], resolving each store folder once for many links (`resolved` maps
/// the folder as the links name it to its resolved path).
pub(crate) fn slice_of_link_resolving(
    link: &Path,
    resolved: &mut std::collections::HashMap<PathBuf, PathBuf>,
) -> Result<Option<(Store, String)>, String> {
    let metadata = std::fs::symlink_metadata(link).map_err(|error| cannot("read", link, &error))?;
    if !metadata.file_type().is_symlink() {
        return Ok(None);
    }
    let target = std::fs::read_link(link).map_err(|error| cannot("read", link, &error))?;
    if target.is_absolute() {
        return Err(format!("`{}` is an absolute link; bundles link into their store relatively", link.display()));
    }
    let name = target.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    if !is_slice_name(&name) {
        return Err(format!("`{}` links to `{}`, which is not a store entry", link.display(), target.display()));
    }
    let parent = link.parent().unwrap_or(Path::new("."));
    let joined = parent.join(&target);
    let store = joined.parent().map(Path::to_path_buf).unwrap_or_default();
    let store = resolved.entry(store.clone()).or_insert_with(|| store.canonicalize().unwrap_or(store)).clone();
    Ok(Some((Store::at(store), name)))
}

/// The slices a bundle folder links to (its `content/skills/<source>` links).
pub fn linked_slices(bundle: &Path) -> Vec<(Store, String)> {
    let skills = bundle.join(SKILLS_PREFIX.trim_end_matches('/'));
    let Ok(entries) = std::fs::read_dir(&skills) else { return Vec::new() };
    let mut resolved = std::collections::HashMap::new();
    entries.flatten().filter_map(|entry| slice_of_link_resolving(&entry.path(), &mut resolved).ok().flatten()).collect()
}

/// The size of a store, as `acompose serve` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub entries: usize,
    pub bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_climb_to_the_common_folder() {
        assert_eq!(
            relative_path(Path::new("/h/bundles/id/content/skills"), Path::new("/h/store/slice-x")),
            PathBuf::from("../../../../store/slice-x")
        );
        assert_eq!(relative_path(Path::new("/a"), Path::new("/a/b")), PathBuf::from("b"));
    }

    #[test]
    fn a_threads_staging_folder_is_made_again_when_gone_and_ended_only_when_empty() {
        let folder = tempfile::tempdir().expect("tempdir");
        let store = Store::at(folder.path().join("store"));
        store.create().expect("store");
        let first = store.make_staging("a").expect("first");
        assert_eq!(first.parent(), Some(store.thread_staging().as_path()));
        std::fs::remove_dir(&first).expect("remove");
        store.end_staging();
        assert!(!store.thread_staging().exists(), "an empty staging folder is ended");
        let second = store.make_staging("b").expect("made again");
        assert!(second.is_dir());
        store.end_staging();
        assert!(second.is_dir(), "a staging folder in use is kept");
        std::fs::remove_dir(&second).expect("remove");
        store.end_staging();
        assert_eq!(std::fs::read_dir(store.root()).expect("store").count(), 0, "nothing is left in the store");
    }

    #[test]
    fn a_trees_recorded_numbers_are_forgotten_when_this_process_replaces_or_removes_it() {
        let folder = tempfile::tempdir().expect("tempdir");
        let store = Store::at(folder.path().join("store"));
        store.create().expect("store");
        let stat = Stat { size: 0, modified_nanos: 1, inode: 2 };
        // An entry removed.
        let tree = "ab".repeat(KEY_DIGITS / 2);
        std::fs::create_dir(store.root().join(&tree)).expect("tree");
        remember_tree_stats([(store.root().join(&tree), stat)]);
        assert_eq!(known_tree_stat(&store.root().join(&tree)), Some(stat));
        store.remove(&tree).expect("remove");
        assert_eq!(known_tree_stat(&store.root().join(&tree)), None);
        // An entry published under a name whose numbers were kept.
        let skills = vec![("one".to_owned(), tree.clone())];
        let slice = StoreSlice { source: "p".to_owned(), key: slice_key(&skills), skills };
        remember_tree_stats([(store.root().join(slice.entry_name()), stat)]);
        store.put_slice(&slice).expect("put");
        assert_eq!(known_tree_stat(&store.root().join(slice.entry_name())), None);
    }

    #[test]
    fn a_writer_ending_leaves_the_staging_folders_to_the_writers_still_at_work() {
        let folder = tempfile::tempdir().expect("tempdir");
        let store = Store::at(folder.path().join("store"));
        store.create().expect("store");
        // Two bundles written side by side: the second ends while the first is between
        // two entries, its thread's staging folder empty for a moment.
        store.begin_staging();
        store.begin_staging();
        let entry = store.make_staging("a").expect("staged");
        std::fs::remove_dir(&entry).expect("published");
        store.end_staging();
        assert!(store.thread_staging().is_dir(), "the first writer's folder stays while it writes");
        store.end_staging();
        assert!(!store.thread_staging().exists(), "the last writer ends it");
    }
}
