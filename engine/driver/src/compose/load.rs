//! Reading person sources and catalogues from disk (or from the embedded roster) into
//! salsa inputs. Symlinks anywhere are refused; every file's bytes are read here and
//! nowhere else. Inputs are set only when their bytes changed, and every path looked at
//! is recorded so the fingerprint cache can tell later whether anything changed.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

pub use crate::home::observe::{Observed, Stat, observe};
use std::sync::Arc;

use acompose_engine::catalogue::{Catalogue, Summarized};
pub(crate) use walk::read_whole;
use walk::walk;

mod walk;
use acompose_engine::{Bytes, Database, Diagnostic, Package, PackageKind, PersonSource, SourceFile};
use salsa::Durability;
use salsa::Setter;

pub use crate::error::error_kind;
pub use crate::home::read::{EMBEDDED, Location, Selection, printable, read_limited};

/// Files read from disk: `(relative path, bytes)`, the problems met and every path
/// looked at.
#[derive(Default)]
pub struct Read {
    pub files: Vec<(String, Body)>,
    pub diagnostics: Vec<Diagnostic>,
    pub observed: Vec<(PathBuf, Observed)>,
    /// Whether files of skill folders are summarized as they are read (see [`Body`]).
    summarize: bool,
    /// Files the loader already holds, as they were when read: one whose metadata is
    /// still the same is kept ([`Body::Kept`]) instead of being read again.
    known: HashMap<PathBuf, Observed>,
    /// Paths (relative to the root) a projection into the root owns: links met there are
    /// a projection's, left out instead of refused.
    owned_by_projection: std::collections::BTreeSet<String>,
    /// The owned links met and left out, relative to the root.
    pub projected: Vec<String>,
    /// Which skill folders' summarized files also keep their bytes (see [`Hold`]).
    hold: Hold,
    /// The bytes kept, by the blake3 of each file.
    held: Vec<([u8; 32], Bytes)>,
}

/// Which skill folders of a catalogue keep the bytes of their summarized files from the
/// read until their store trees are written: those a selection may take. `None` keeps
/// none; an empty list keeps all (a repository used whole); otherwise the folders whose
/// name a `skill` selector matches. A file a selection takes that was not kept is read
/// again when its tree is written.
pub type Hold = Option<Arc<Vec<acompose_engine::selector::Pattern>>>;

/// The bytes of the skill files kept (see [`Hold`]), by blake3, copied into one buffer:
/// thousands of small blocks left alive in the reading threads' heaps would keep those
/// heaps growing a page at a time for the rest of the run.
#[derive(Debug, Default)]
pub struct HeldSources {
    buffer: Vec<u8>,
    at: HashMap<[u8; 32], std::ops::Range<usize>>,
}

impl HeldSources {
    fn insert(&mut self, digest: [u8; 32], bytes: &[u8]) {
        if let std::collections::hash_map::Entry::Vacant(entry) = self.at.entry(digest) {
            let start = self.buffer.len();
            self.buffer.extend_from_slice(bytes);
            entry.insert(start..self.buffer.len());
        }
    }

    /// The bytes that hashed to `digest` when they were read.
    pub fn get(&self, digest: &[u8; 32]) -> Option<&[u8]> {
        self.at.get(digest).and_then(|range| self.buffer.get(range.clone()))
    }

    pub fn len(&self) -> usize {
        self.at.len()
    }

    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }
}

fn holds(hold: &Hold, relative: &str) -> bool {
    let Some(patterns) = hold else { return false };
    let Some(name) =
        relative.strip_prefix(".agents/skills/").and_then(|rest| rest.split_once('/')).map(|(name, _)| name)
    else {
        return false;
    };
    patterns.is_empty() || !acompose_engine::selector::matches(patterns, name).is_empty()
}

/// What is kept of a file read: its bytes, or, for a file of a catalogue's skill folder
/// read while summarizing, its summary (the bytes are read again when a bundle holding
/// the file is written).
#[derive(Debug, Clone)]
pub enum Body {
    Bytes(Bytes),
    Summarized(Arc<Summarized>),
    /// Unchanged since the loader read it (same size, time and inode, and not racily
    /// fresh then): its input stays as it is.
    Kept,
}

impl Body {
    fn length(&self) -> u64 {
        match self {
            Body::Bytes(bytes) => bytes.len() as u64,
            Body::Summarized(summarized) => summarized.summary.raw_length,
            Body::Kept => 0,
        }
    }
}

/// What a loader observed, kept after its database is dropped: every path it looked at
/// (for the fingerprint cache) and how much it read.
#[derive(Debug, Default)]
pub struct Observations {
    pub observed: HashMap<PathBuf, Observed>,
    pub counters: ReadCounters,
}

/// How much the loader read, for `--stats`.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadCounters {
    pub files_read: usize,
    pub bytes_read: u64,
}

/// What was looked up about one root: its revision and resolved path, and whether its
/// revision files were observed for the fingerprint cache.
#[derive(Debug, Clone, Default)]
struct RootFacts {
    revision_and_key: Option<(Option<String>, String)>,
    sources_noted: bool,
}

/// What a watched root is, so a change under it can be re-read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Root {
    Package {
        label: String,
        kind: PackageKind,
    },
    Catalogue {
        label: String,
    },
    /// A private overlay, or home's folder of them: read again by every convergence.
    Overlays,
}

/// Keeps the salsa inputs of loaded packages and catalogues so a reload only sets what
/// changed.
#[derive(Default)]
pub struct Loader {
    /// Whether catalogues are read summarizing their skill files.
    summarize: bool,
    /// Whether the bytes of skill files a selection may take are kept (see [`Hold`]).
    holding: bool,
    /// Which skill folders keep their bytes, by catalogue root (see [`Hold`]).
    hold: HashMap<PathBuf, Arc<Vec<acompose_engine::selector::Pattern>>>,
    /// The bytes kept since the last [`Loader::take_held`].
    held: HeldSources,
    files: HashMap<(String, String), SourceFile>,
    packages: BTreeMap<(String, PackageKind), Package>,
    catalogues: BTreeMap<String, Catalogue>,
    source: Option<PersonSource>,
    roots: BTreeMap<PathBuf, Root>,
    /// What callers looked up about roots, kept until the root is refreshed (or read
    /// afresh): a live converger does not read every repository's `.git` for each edit.
    root_facts: HashMap<PathBuf, RootFacts>,
    observed: HashMap<PathBuf, Observed>,
    /// The observations sorted by path as the fingerprint cache lists them, kept between
    /// saves and brought up to date from `changed` ([`Loader::sorted_observed`]).
    sorted: std::sync::Arc<Vec<(PathBuf, Observed)>>,
    /// The paths observed anew since `sorted` was brought up to date; `None` when there
    /// were too many to be worth it (`sorted` is made again).
    changed: Option<std::collections::HashSet<PathBuf>>,
    last_selection: Option<Selection>,
    pub counters: ReadCounters,
    /// The folder the relative paths callers give are read under; empty for the
    /// process's own working directory. Labels are made from the paths as given, so a
    /// caller that names a folder here labels files exactly as a command run in that
    /// folder would, without changing the process's working directory (which threads
    /// share).
    working_directory: PathBuf,
}

/// At most how many paths observed anew are put into the kept sorted list one by one;
/// past it (a cold read, a reload) the list is sorted again whole.
const SORTED_CHANGES_KEPT: usize = 4096;

/// Turns a path into a label: as the user wrote it, with `/` separators.
pub fn label_of(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    let trimmed = text.trim_end_matches('/');
    let trimmed = trimmed.strip_prefix("./").filter(|rest| !rest.is_empty()).unwrap_or(trimmed);
    if trimmed.is_empty() { ".".to_owned() } else { trimmed.to_owned() }
}

/// The resolved identity of folders, for collapsing providers with the same folder. Many
/// paths share parent folders (the repositories under a projects root): each parent
/// folder is resolved once, and a path's last component is looked at by one `lstat` (a
/// link, or a path that does not end in a name, is resolved whole).
#[derive(Default)]
pub struct PathKeys {
    parents: std::sync::Mutex<HashMap<PathBuf, Option<PathBuf>>>,
}

impl PathKeys {
    pub fn path_key(&self, path: &Path) -> String {
        self.resolve(path).unwrap_or_else(|| path.to_path_buf()).to_string_lossy().into_owned()
    }

    fn resolve(&self, path: &Path) -> Option<PathBuf> {
        let (Some(parent), Some(name)) =
            (path.parent().filter(|parent| !parent.as_os_str().is_empty()), path.file_name())
        else {
            return path.canonicalize().ok();
        };
        let metadata = std::fs::symlink_metadata(path).ok()?;
        if metadata.file_type().is_symlink() {
            return path.canonicalize().ok();
        }
        let resolved = {
            let mut parents = self.parents.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            parents.entry(parent.to_path_buf()).or_insert_with(|| parent.canonicalize().ok()).clone()
        };
        Some(resolved?.join(name))
    }
}

/// The warning for a hidden name inside a skill folder: left out of the skill.
fn hidden_member(label: &str, relative: &str) -> Diagnostic {
    use acompose_engine::diagnostic::sanitize;
    Diagnostic::warning(
        "unportable-name",
        format!("`{}` is not a portable name (it starts with `.`); it is left out of the skill", sanitize(relative)),
    )
    .in_file(sanitize(&format!("{label}/{relative}")))
    .hint("rename it to letters, digits, `.`, `_` and `-`, not starting with `.`, to deliver it, or remove it")
}

fn relative_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|component| component.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Reads a whole package directory.
fn read_package(root: &Path, label: &str) -> Read {
    let mut read = Read::default();
    let metadata = std::fs::symlink_metadata(root);
    let problem = match &metadata {
        Err(error) => Some(
            Diagnostic::error("package-missing", format!("cannot open person source `{label}`: {}", error_kind(error)))
                .hint("pass an existing package directory, or `roster:core` for the embedded default"),
        ),
        Ok(metadata) if metadata.file_type().is_symlink() => Some(
            Diagnostic::error("symlink-refused", format!("`{label}` is a symbolic link"))
                .hint("pass the real directory; packages may not contain or be symbolic links"),
        ),
        Ok(metadata) if !metadata.is_dir() => Some(
            Diagnostic::error("package-not-directory", format!("`{label}` is not a directory"))
                .hint("a person source is a package directory"),
        ),
        Ok(_) => None,
    };
    if let Some(problem) = problem {
        read.observed.push((root.to_path_buf(), Observed::Missing));
        read.diagnostics.push(problem.in_file(label));
        return read;
    }
    walk(root, root, metadata.ok().as_ref(), label, "package", &mut read);
    read
}

/// The parts of a repository a catalogue is made of.
const CATALOGUE_PARTS: [&str; 3] = [".agents/skills", ".agents/composed", ".agents/roles.kdl"];

/// Reads the catalogue parts of a repository; `None` when the folder does not exist.
///
/// With `summarize`, the files of skill folders are kept as summaries, not bytes.
pub fn read_catalogue(root: &Path, label: &str, summarize: bool) -> Option<Read> {
    read_catalogue_knowing(root, label, summarize, HashMap::new(), None)
}

/// [`read_catalogue`], keeping the `known` files whose metadata did not change.
fn read_catalogue_knowing(
    root: &Path,
    label: &str,
    summarize: bool,
    known: HashMap<PathBuf, Observed>,
    hold: Hold,
) -> Option<Read> {
    let mut read = Read { summarize, known, hold, ..Read::default() };
    match std::fs::symlink_metadata(root) {
        Err(_) => return None,
        Ok(metadata) if metadata.file_type().is_symlink() => {
            read.diagnostics.push(
                Diagnostic::error("symlink-refused", format!("`{label}` is a symbolic link"))
                    .in_file(label)
                    .hint("point at the real folder"),
            );
            return Some(read);
        }
        Ok(metadata) if !metadata.is_dir() => return None,
        // The root itself is fingerprinted, so replacing it (by a symlink, say) is seen.
        Ok(metadata) => read.observed.push((root.to_path_buf(), Observed::Directory(Stat::of(&metadata)))),
    }
    let agents = root.join(".agents");
    match std::fs::symlink_metadata(&agents) {
        Err(error) => {
            read.observed.push((agents, Observed::absent(&error)));
            return Some(read);
        }
        Ok(metadata) if metadata.file_type().is_symlink() => {
            read.diagnostics.push(
                Diagnostic::error("symlink-refused", "symbolic links are not allowed in a catalogue")
                    .in_file(format!("{label}/.agents"))
                    .hint("replace the link with the folder it points to"),
            );
            return Some(read);
        }
        Ok(metadata) => read.observed.push((agents, Observed::Directory(Stat::of(&metadata)))),
    }
    // A projection into the repository (its record is fingerprinted like any input, so a
    // new or removed projection is seen) owns links the walk leaves out.
    let record = root.join(acompose_engine::projection::RECORD);
    let observed = crate::home::observe::observe(&record);
    // Only a record that is there is read for what it owns.
    if matches!(observed, Observed::File(..)) {
        read.owned_by_projection = crate::home::projection_record::owned_paths(root);
    }
    read.observed.push((record, observed));
    for part in CATALOGUE_PARTS {
        let path = root.join(part);
        match std::fs::symlink_metadata(&path) {
            Ok(metadata) => walk(root, &path, Some(&metadata), label, "catalogue", &mut read),
            Err(error) => read.observed.push((path, Observed::absent(&error))),
        }
    }
    read.files.sort_by(|a, b| a.0.cmp(&b.0));
    Some(read)
}

/// Reads every file of a folder (no symlinks followed).
pub fn read_folder(root: &Path, label: &str) -> Read {
    let mut read = Read::default();
    walk(root, root, None, label, "folder", &mut read);
    read
}

impl Loader {
    fn record(&mut self, read: &mut Read) {
        self.counters.files_read += read.files.iter().filter(|(_, body)| !matches!(body, Body::Kept)).count();
        self.counters.bytes_read += read.files.iter().map(|(_, body)| body.length()).sum::<u64>();
        // Racily fresh entries are smudged now, as they are observed: how fresh a file or
        // folder was is measured against the moment it was read, not the moment the cache
        // is written, which may be much later (a long convergence, or watch mode).
        let mut observed = std::mem::take(&mut read.observed);
        for (path, observed) in observed.drain(..) {
            self.observe(path, crate::home::observe::smudge_if_racy(observed));
        }
        read.observed = observed;
        for (digest, bytes) in read.held.drain(..) {
            self.held.insert(digest, &bytes);
        }
    }

    /// Every path read or looked at so far, for the fingerprint cache.
    pub fn observed(&self) -> &HashMap<PathBuf, Observed> {
        &self.observed
    }

    /// Records what a path was found to be, and that it changed for the sorted list.
    fn observe(&mut self, path: PathBuf, observed: Observed) {
        if self.observed.get(&path) == Some(&observed) {
            return;
        }
        if let Some(changed) = self.changed.as_mut() {
            if changed.len() < SORTED_CHANGES_KEPT {
                changed.insert(path.clone());
            } else {
                self.changed = None;
            }
        }
        self.observed.insert(path, observed);
    }

    /// Every observation, sorted by path as the fingerprint cache lists them. A watch
    /// saves the cache after each edit: the list is kept between saves and only the paths
    /// observed anew since are put in it, instead of sorting every path again.
    pub fn sorted_observed(&mut self) -> std::sync::Arc<Vec<(PathBuf, Observed)>> {
        let by_path = |a: &Path, b: &Path| a.as_os_str().cmp(b.as_os_str());
        match self.changed.as_mut() {
            Some(changed) => {
                let sorted = std::sync::Arc::make_mut(&mut self.sorted);
                for path in changed.drain() {
                    let Some(observed) = self.observed.get(&path).copied() else { continue };
                    match sorted.binary_search_by(|(known, _)| by_path(known, &path)) {
                        Ok(index) => sorted[index].1 = observed,
                        Err(index) => sorted.insert(index, (path, observed)),
                    }
                }
            }
            None => {
                let mut sorted: Vec<(PathBuf, Observed)> =
                    self.observed.iter().map(|(path, observed)| (path.clone(), *observed)).collect();
                sorted.sort_unstable_by(|a, b| by_path(&a.0, &b.0));
                self.sorted = std::sync::Arc::new(sorted);
                self.changed = Some(std::collections::HashSet::new());
            }
        }
        std::sync::Arc::clone(&self.sorted)
    }

    /// What is left of the loader once its database is gone: the paths it observed and
    /// its counters (its inputs are dropped with it).
    pub fn into_observations(self) -> Observations {
        Observations { observed: self.observed, counters: self.counters }
    }

    /// `look_up`'s facts about each root, looked up again (in parallel) when `fresh`, when
    /// never looked up, or when the root was refreshed since.
    pub fn root_facts<F>(
        &mut self,
        roots: &[(PathBuf, String)],
        fresh: bool,
        look_up: F,
    ) -> Vec<(Option<String>, String)>
    where
        F: Fn(&Path) -> (Option<String>, String) + Sync,
    {
        use rayon::prelude::*;
        let missing: Vec<&PathBuf> = roots
            .iter()
            .map(|(root, _)| root)
            .filter(|root| fresh || self.root_facts.get(*root).is_none_or(|facts| facts.revision_and_key.is_none()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let found: Vec<(PathBuf, (Option<String>, String))> =
            missing.par_iter().map(|root| ((*root).clone(), look_up(root))).collect();
        for (root, facts) in found {
            self.root_facts.entry(root).or_default().revision_and_key = Some(facts);
        }
        roots
            .iter()
            .map(|(root, _)| {
                self.root_facts.get(root).and_then(|facts| facts.revision_and_key.clone()).unwrap_or_default()
            })
            .collect()
    }

    /// Observes the files `sources` names for each root (in parallel) for the fingerprint
    /// cache, again when `fresh` or when the root was refreshed since they were.
    pub fn note_sources<F>(&mut self, roots: &[&Path], fresh: bool, sources: F)
    where
        F: Fn(&Path) -> Vec<PathBuf> + Sync,
    {
        use rayon::prelude::*;
        let pending: Vec<&Path> = roots
            .iter()
            .copied()
            .filter(|root| fresh || !self.root_facts.get(*root).is_some_and(|facts| facts.sources_noted))
            .collect();
        let observed: Vec<(PathBuf, Observed)> = pending
            .par_iter()
            .flat_map_iter(|root| {
                sources(root).into_iter().map(|path| {
                    let observed = crate::home::observe::observe(&path);
                    (path, observed)
                })
            })
            .collect();
        for (path, observed) in observed {
            self.note(&path, observed);
        }
        for root in pending {
            self.root_facts.entry(root.to_path_buf()).or_default().sources_noted = true;
        }
    }

    /// Reads one file of home (the MCP inventory) as an input shown as `origin/relative`,
    /// noting it for the fingerprint cache: `Ok(None)` when it does not exist, the limit's
    /// diagnostic when it is too large, an I/O error's text otherwise.
    pub fn home_file(
        &mut self,
        db: &mut Database,
        path: &Path,
        origin: &str,
        relative: &str,
        limit: acompose_engine::limits::Limit,
    ) -> Result<Option<SourceFile>, Result<Diagnostic, String>> {
        match std::fs::symlink_metadata(path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                self.note(path, crate::home::observe::Observed::Missing);
                return Ok(None);
            }
            Ok(metadata) if metadata.is_file() => {}
            _ => return Err(Err(format!("`{}` is not a regular file", path.display()))),
        }
        let label = format!("{origin}/{relative}");
        let bytes = match read_limited(path, &label, limit) {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(too_large)) => return Err(Ok(too_large)),
            Err(error) => return Err(Err(format!("cannot read `{}`: {}", path.display(), error_kind(&error)))),
        };
        self.note(path, crate::home::observe::observe(path));
        let body = Body::Bytes(Bytes::from(bytes));
        Ok(Some(self.file(db, origin, relative.to_owned(), body, Durability::LOW, Durability::LOW)))
    }

    /// Records a path read outside the loader (the host configuration).
    pub fn note(&mut self, path: &Path, observed: Observed) {
        self.observe(path.to_path_buf(), crate::home::observe::smudge_if_racy(observed));
    }

    /// The person source of `selection` as loaded before, reading it only when the
    /// selection changed (watch mode re-reads changed packages with `refresh`).
    pub fn load_cached(&mut self, db: &mut Database, selection: &Selection) -> PersonSource {
        match self.source {
            Some(source) if self.last_selection.as_ref() == Some(selection) => source,
            _ => self.load(db, selection),
        }
    }

    /// Loads a selection, reading packages from disk again and setting what changed.
    pub fn load(&mut self, db: &mut Database, selection: &Selection) -> PersonSource {
        self.last_selection = Some(selection.clone());
        let package = self.package(db, &selection.person, PackageKind::Person);
        let libraries: Vec<Package> =
            selection.libraries.iter().map(|location| self.package(db, location, PackageKind::Library)).collect();
        match self.source {
            Some(source) => {
                if source.package(db) != package {
                    source.set_package(db).to(package);
                }
                if source.libraries(db) != &libraries {
                    source.set_libraries(db).to(libraries);
                }
                if source.core_rules(db) != selection.core_rules {
                    source.set_core_rules(db).to(selection.core_rules);
                }
                source
            }
            None => {
                let source = PersonSource::new(db, package, libraries, selection.core_rules);
                self.source = Some(source);
                source
            }
        }
    }

    fn package(&mut self, db: &mut Database, location: &Location, kind: PackageKind) -> Package {
        match location {
            Location::Embedded => {
                let read = Read {
                    files: acompose_roster::files()
                        .iter()
                        .map(|(path, bytes)| ((*path).to_owned(), Body::Bytes(Bytes::from(*bytes))))
                        .collect(),
                    ..Read::default()
                };
                self.package_from(db, EMBEDDED.to_owned(), kind, true, read, Durability::HIGH)
            }
            Location::Directory(path) => {
                let root = self.on_disk(path);
                self.directory_package(db, &root, label_of(path), kind)
            }
        }
    }

    /// Reads the package folder `root` (a path on disk) and sets its input under `label`.
    fn directory_package(&mut self, db: &mut Database, root: &Path, label: String, kind: PackageKind) -> Package {
        let mut read = read_package(root, &label);
        self.roots.insert(root.to_path_buf(), Root::Package { label: label.clone(), kind });
        self.record(&mut read);
        self.package_from(db, label, kind, false, read, Durability::MEDIUM)
    }

    /// Sets (or updates) the input of a package read as `read`.
    fn package_from(
        &mut self,
        db: &mut Database,
        label: String,
        kind: PackageKind,
        embedded: bool,
        mut read: Read,
        durability: Durability,
    ) -> Package {
        let files: Vec<SourceFile> = std::mem::take(&mut read.files)
            .into_iter()
            .map(|(relative, bytes)| self.file(db, &label, relative, bytes, durability, durability))
            .collect();
        match self.packages.get(&(label.clone(), kind)) {
            Some(&package) => {
                if package.files(db) != &files {
                    package.set_files(db).with_durability(durability).to(files);
                }
                if package.load_diagnostics(db) != &read.diagnostics {
                    package.set_load_diagnostics(db).to(read.diagnostics);
                }
                package
            }
            None => {
                let package = Package::builder(label.clone(), kind, embedded, files, read.diagnostics)
                    .durability(durability)
                    .new(db);
                self.packages.insert((label, kind), package);
                package
            }
        }
    }

    /// Sets (or updates) one file input, keyed by its origin label and relative path: new
    /// with `durability`, and with `changed` once its bytes change.
    fn file(
        &mut self,
        db: &mut Database,
        label: &str,
        relative: String,
        body: Body,
        durability: Durability,
        changed: Durability,
    ) -> SourceFile {
        let key = (label.to_owned(), relative.clone());
        let (bytes, summary) = match body {
            Body::Bytes(bytes) => (bytes, None),
            Body::Summarized(summarized) => (Bytes::default(), Some(summarized)),
            Body::Kept => match self.files.get(&key) {
                Some(&file) => return file,
                // Only files the loader holds are kept; an empty one stands in otherwise.
                None => (Bytes::default(), None),
            },
        };
        match self.files.get(&key) {
            Some(&file) => {
                if file.bytes(db)[..] != bytes[..] {
                    file.set_bytes(db).with_durability(changed).to(bytes);
                }
                if file.summary(db) != &summary {
                    file.set_summary(db).with_durability(changed).to(summary);
                }
                file
            }
            None => {
                let file = SourceFile::builder(label.to_owned(), relative, bytes)
                    .summary(summary)
                    .durability(durability)
                    .new(db);
                self.files.insert(key, file);
                file
            }
        }
    }

    /// Sets (or updates) a catalogue input from files already read.
    ///
    /// Durability follows how likely an input is to change again. Catalogue files start
    /// MEDIUM, and a skill file whose bytes change drops to LOW. Editing that skill again
    /// then makes salsa re-verify only the LOW memos that depend on it (its summary, its
    /// catalogue's listing, the resolutions of the roles that admit it), while the memos
    /// of the thousands of untouched files pass on their durability without walking their
    /// dependencies. Everything that many roles read without needing the bytes stays
    /// MEDIUM when it changes — the catalogue's file list (skill names come from it and
    /// from paths), its availability and `roles.kdl` — because salsa cannot backdate a
    /// value whose durability dropped, and every role would re-plan once.
    pub fn catalogue_from(
        &mut self,
        db: &mut Database,
        label: &str,
        available: bool,
        read_files: Vec<(String, Body)>,
        diagnostics: Vec<Diagnostic>,
    ) -> Catalogue {
        let files: Vec<SourceFile> = read_files
            .into_iter()
            .map(|(relative, bytes)| {
                let changed = if relative == ".agents/roles.kdl" { Durability::MEDIUM } else { Durability::LOW };
                self.file(db, label, relative, bytes, Durability::MEDIUM, changed)
            })
            .collect();
        match self.catalogues.get(label) {
            Some(&catalogue) => {
                if catalogue.available(db) != available {
                    catalogue.set_available(db).to(available);
                }
                if catalogue.files(db) != &files {
                    catalogue.set_files(db).to(files);
                }
                if catalogue.load_diagnostics(db) != &diagnostics {
                    catalogue.set_load_diagnostics(db).to(diagnostics);
                }
                catalogue
            }
            None => {
                let catalogue = Catalogue::builder(label.to_owned(), available, files, diagnostics)
                    .durability(Durability::MEDIUM)
                    .new(db);
                self.catalogues.insert(label.to_owned(), catalogue);
                catalogue
            }
        }
    }

    /// Reads a repository's catalogue parts (`.agents/skills`, `.agents/composed`,
    /// `.agents/roles.kdl`) without walking the rest of the repository.
    pub fn catalogue(&mut self, db: &mut Database, root: &Path, label: &str) -> Catalogue {
        // A refresh re-reads one catalogue after a change in it: the files already held
        // whose metadata is the same are kept, so an edit reads one file, not all of them.
        // A file kept as a summary while bytes are wanted (or the other way) is read again.
        let summarize = self.summarize;
        let held: &[SourceFile] = match self.catalogues.get(label) {
            Some(catalogue) => catalogue.files(db),
            None => &[],
        };
        let known: HashMap<PathBuf, Observed> = held
            .iter()
            .filter(|file| !Summarized::applies_to(file.relative_path(db)) || file.summary(db).is_some() == summarize)
            .filter_map(|file| {
                let path = root.join(file.relative_path(db));
                self.observed.get(&path).map(|observed| (path, *observed))
            })
            .collect();
        let read = read_catalogue_knowing(root, label, self.summarize, known, self.hold.get(root).cloned());
        self.apply_catalogue(db, root, label, read)
    }

    /// Sets a catalogue input from a read done elsewhere (reads can run in parallel;
    /// setting inputs cannot).
    pub fn apply_catalogue(&mut self, db: &mut Database, root: &Path, label: &str, read: Option<Read>) -> Catalogue {
        self.roots.insert(root.to_path_buf(), Root::Catalogue { label: label.to_owned() });
        match read {
            Some(mut read) => {
                self.record(&mut read);
                let projected = std::mem::take(&mut read.projected);
                let catalogue = self.catalogue_from(db, label, true, read.files, read.diagnostics);
                if catalogue.projected(db) != &projected {
                    catalogue.set_projected(db).with_durability(Durability::MEDIUM).to(projected);
                }
                catalogue
            }
            None => {
                self.observe(root.to_path_buf(), Observed::Missing);
                let catalogue = self.catalogue_from(db, label, false, Vec::new(), Vec::new());
                if !catalogue.projected(db).is_empty() {
                    catalogue.set_projected(db).with_durability(Durability::MEDIUM).to(Vec::new());
                }
                catalogue
            }
        }
    }

    /// Whether `root` was read before (and is still the catalogue of `label`).
    pub fn has_catalogue(&self, root: &Path, label: &str) -> bool {
        self.catalogues.contains_key(label) && self.roots.contains_key(root)
    }

    /// The catalogues of `roots`, reading in parallel those not read yet (all of them
    /// when `fresh`).
    pub fn catalogues(&mut self, db: &mut Database, roots: &[(PathBuf, String)], fresh: bool) -> Vec<Catalogue> {
        use rayon::prelude::*;
        let pending: Vec<&(PathBuf, String)> =
            roots.iter().filter(|(root, label)| fresh || !self.has_catalogue(root, label)).collect();
        let summarize = self.summarize;
        let reads: Vec<Option<Read>> = pending
            .par_iter()
            .map(|(root, label)| {
                read_catalogue_knowing(root, label, summarize, HashMap::new(), self.hold.get(root).cloned())
            })
            .collect();
        // Grow the maps once: tables of megabytes regrown by doubling leave freed blocks
        // that raise the allocator's threshold for returning memory to the system, and the
        // rest of the run then keeps its transient buffers resident.
        let (files, observed) = reads
            .iter()
            .flatten()
            .fold((0, 0), |(files, observed), read| (files + read.files.len(), observed + read.observed.len()));
        self.files.reserve(files);
        self.observed.reserve(observed);
        let held: usize = reads.iter().flatten().flat_map(|read| &read.held).map(|(_, bytes)| bytes.len()).sum();
        self.held.buffer.reserve(held);
        for ((root, label), read) in pending.into_iter().zip(reads) {
            self.apply_catalogue(db, root, label, read);
        }
        roots
            .iter()
            .map(|(root, label)| match self.catalogues.get(label) {
                Some(&catalogue) => catalogue,
                None => self.catalogue(db, root, label),
            })
            .collect()
    }

    /// The catalogue of `root`, read only the first time it is asked for.
    pub fn cached_catalogue(&mut self, db: &mut Database, root: &Path, label: &str) -> Catalogue {
        match self.catalogues.get(label) {
            Some(&catalogue) if self.roots.contains_key(root) => catalogue,
            _ => self.catalogue(db, root, label),
        }
    }

    /// Re-reads the package or catalogue that contains `path`. Returns whether `path`
    /// belonged to one.
    pub fn refresh(&mut self, db: &mut Database, path: &Path) -> bool {
        let Some((root, kind)) = self
            .roots
            .iter()
            .filter(|(root, _)| path.starts_with(root))
            .max_by_key(|(root, _)| root.as_os_str().len())
            .map(|(root, kind)| (root.clone(), kind.clone()))
        else {
            return false;
        };
        self.root_facts.remove(&root);
        match kind {
            Root::Catalogue { label } => {
                self.catalogue(db, &root, &label);
            }
            Root::Package { label, kind } => {
                self.directory_package(db, &root, label, kind);
            }
            Root::Overlays => {}
        }
        true
    }

    /// Reads the private overlays at `paths` (in order), each a `SourceFile` whose origin
    /// is its folder and whose relative path is its name; `folder` is home's folder of
    /// overlays when they were listed from it. Every path is observed for the fingerprint
    /// cache and watched; a missing, unreadable or oversized file, or two with one name,
    /// is a diagnostic.
    pub fn overlays(
        &mut self,
        db: &mut Database,
        paths: &[PathBuf],
        folder: Option<&Path>,
    ) -> Result<Vec<SourceFile>, Vec<Diagnostic>> {
        if let Some(folder) = folder {
            self.note(folder, observe(folder));
            self.roots.insert(folder.to_path_buf(), Root::Overlays);
        }
        let mut files = Vec::new();
        let mut diagnostics = Vec::new();
        let mut names: BTreeMap<String, PathBuf> = BTreeMap::new();
        for path in paths {
            let shown = path.display().to_string();
            let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
            let origin = path.parent().map(|parent| parent.display().to_string()).unwrap_or_default();
            if folder.is_none() {
                self.roots.insert(path.clone(), Root::Overlays);
            }
            self.note(path, observe(path));
            if let Some(first) = names.insert(name.clone(), path.clone()) {
                diagnostics.push(
                    Diagnostic::error(
                        "overlay-duplicate-name",
                        format!("two overlays are named `{}`", printable(&name)),
                    )
                    .in_file(shown)
                    .hint(format!(
                        "the other is `{}`; an overlay is known by its file name, so rename one",
                        first.display()
                    )),
                );
                continue;
            }
            match read_limited(path, &shown, acompose_engine::limits::OVERLAY_KDL) {
                Ok(Ok(bytes)) => {
                    let key = (origin.clone(), name.clone());
                    let file = match self.files.get(&key) {
                        Some(&file) => {
                            if file.bytes(db)[..] != bytes[..] {
                                file.set_bytes(db).to(bytes.into());
                            }
                            file
                        }
                        None => {
                            let file = SourceFile::new(db, origin, name, bytes.into());
                            self.files.insert(key, file);
                            file
                        }
                    };
                    files.push(file);
                }
                Ok(Err(too_large)) => diagnostics.push(too_large),
                Err(error) => diagnostics.push(
                    Diagnostic::error(
                        "overlay-unreadable",
                        format!("cannot read this overlay: {}", error_kind(&error)),
                    )
                    .in_file(shown)
                    .hint("create the file, or remove it from `overlays:` in agent-compose.yaml"),
                ),
            }
        }
        if diagnostics.is_empty() { Ok(files) } else { Err(diagnostics) }
    }

    /// The text of a loaded file by its display path, for rendering diagnostics (a
    /// summarized file is read again).
    pub fn text_of(&self, db: &Database, display_path: &str) -> Option<String> {
        let file = self.files.values().find(|file| file.display_path(db) == display_path)?;
        match file.summary(db) {
            Some(summarized) => {
                let bytes = std::fs::read(&summarized.location).ok()?;
                Some(printable(&String::from_utf8_lossy(&bytes)))
            }
            None => Some(printable(&String::from_utf8_lossy(file.bytes(db)))),
        }
    }

    /// Whether the bytes of the skill files a selection may take are kept from the read
    /// until [`Loader::take_held`] (what estate convergence does: it writes their store
    /// trees from them).
    pub fn hold_selected_skills(&mut self, holding: bool) {
        self.holding = holding;
        if !holding {
            self.hold.clear();
            self.held = HeldSources::default();
        }
    }

    /// Keeps the bytes of the summarized skill files a selection may take from `root`'s
    /// catalogue when it is read from now on (see [`Hold`]); `None` keeps none. Does
    /// nothing unless [`Loader::hold_selected_skills`] is on.
    pub fn hold_skills(&mut self, root: &Path, selectors: Option<Vec<acompose_engine::selector::Pattern>>) {
        if !self.holding {
            return;
        }
        match selectors {
            Some(selectors) => self.hold.insert(root.to_path_buf(), Arc::new(selectors)),
            None => self.hold.remove(root),
        };
    }

    /// The bytes kept since the last call, by blake3 (see [`Hold`]); the loader keeps
    /// none of them after.
    pub fn take_held(&mut self) -> HeldSources {
        std::mem::take(&mut self.held)
    }

    /// Keep the files of skill folders that catalogues are read from now on as summaries
    /// (see [`Body`]): what estate convergence and compose do, unless a compiled bundle
    /// needs their text.
    pub fn summarize_skills(&mut self, summarize: bool) {
        self.summarize = summarize;
    }

    /// A loader that reads the relative paths it is given under `working_directory`, and
    /// labels them as given: what a command run in that folder would read and show.
    pub fn in_directory(working_directory: impl Into<PathBuf>) -> Self {
        Loader { working_directory: working_directory.into(), ..Loader::default() }
    }

    /// Where a path a caller gave is on disk: under the working directory when relative,
    /// itself when absolute or when the loader reads the process's own working directory.
    pub fn on_disk(&self, path: &Path) -> PathBuf {
        self.working_directory.join(path)
    }

    /// The folders being read, for watching.
    pub fn roots(&self) -> Vec<PathBuf> {
        self.roots.keys().cloned().collect()
    }

    /// Whether `path` is inside (or is) a folder being read.
    pub fn reads_within(&self, path: &Path) -> bool {
        path.ancestors().any(|above| self.roots.contains_key(above))
    }

    /// How many folders are being read. A root is never forgotten, so an unchanged count
    /// means an unchanged set of roots.
    pub fn root_count(&self) -> usize {
        self.roots.len()
    }
}

#[cfg(test)]
mod limited_tests {
    use super::*;

    #[test]
    fn a_file_over_its_limit_is_refused_by_its_size() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let limit = acompose_engine::limits::REQUEST_KDL;
        let path = temporary.path().join("request.kdl");
        // Sparse: a size over the limit whose bytes were never written, so refusing it
        // by its size costs nothing.
        std::fs::File::create(&path).and_then(|file| file.set_len(limit.bytes as u64 * 64)).expect("sparse file");
        let refused = read_limited(&path, "request.kdl", limit).expect("opened");
        assert_eq!(refused.map_err(|diagnostic| diagnostic.code), Err(limit.code));
        std::fs::write(&path, "compose {}\n").expect("small file");
        let read = read_limited(&path, "request.kdl", limit).expect("opened");
        assert_eq!(read.ok().as_deref(), Some(&b"compose {}\n"[..]));
    }
}

#[cfg(test)]
mod working_directory_tests {
    use super::*;

    #[test]
    fn a_loader_in_a_directory_reads_there_and_labels_as_given_even_after_a_refresh() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let manifest = temporary.path().join("pkg/person.kdl");
        std::fs::create_dir_all(manifest.parent().expect("parent")).expect("mkdir");
        std::fs::write(&manifest, "person \"first\"\n").expect("write");
        let mut db = Database::default();
        let mut loader = Loader::in_directory(temporary.path());
        let selection =
            Selection { person: Location::Directory(PathBuf::from("pkg")), libraries: Vec::new(), core_rules: false };
        let package = loader.load(&mut db, &selection).package(&db);
        assert_eq!(package.label(&db), "pkg");
        let paths: Vec<String> = package.files(&db).iter().map(|file| file.display_path(&db)).collect();
        assert_eq!(paths, ["pkg/person.kdl"]);
        assert_eq!(loader.roots(), [temporary.path().join("pkg")]);

        std::fs::write(&manifest, "person \"second\"\n").expect("write");
        assert!(loader.refresh(&mut db, &manifest));
        let refreshed = loader.load_cached(&mut db, &selection).package(&db);
        assert_eq!((refreshed, refreshed.label(&db).as_str()), (package, "pkg"));
        assert_eq!(&refreshed.files(&db)[0].bytes(&db)[..], b"person \"second\"\n");
    }
}

#[cfg(test)]
mod hold_tests {
    use super::*;

    #[test]
    fn only_the_skills_a_selector_may_take_keep_their_bytes_and_a_read_holds_each_once() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let root = temporary.path();
        for (skill, text) in [("deploy-a", "same\n"), ("deploy-b", "same\n"), ("review", "other\n")] {
            std::fs::create_dir_all(root.join(format!(".agents/skills/{skill}"))).expect("mkdir");
            std::fs::write(root.join(format!(".agents/skills/{skill}/SKILL.md")), text).expect("write");
        }
        let pattern = |text: &str| acompose_engine::selector::Pattern {
            text: text.to_owned(),
            span: acompose_engine::diagnostic::Span { offset: 0, length: 0 },
        };
        let digest = |text: &str| *blake3::hash(text.as_bytes()).as_bytes();
        let mut loader = Loader::default();
        loader.summarize_skills(true);
        // Off: nothing is kept.
        loader.hold_skills(root, Some(vec![pattern("deploy-*")]));
        let mut db = Database::default();
        loader.catalogue(&mut db, root, "repo");
        assert!(loader.take_held().is_empty());
        // On, with a selector: the two matching folders, whose bytes are the same, once.
        loader.hold_selected_skills(true);
        loader.hold_skills(root, Some(vec![pattern("deploy-*")]));
        let read = read_catalogue_knowing(root, "repo", true, HashMap::new(), loader.hold.get(root).cloned());
        loader.apply_catalogue(&mut db, root, "repo", read);
        let held = loader.take_held();
        assert_eq!(held.len(), 1);
        assert_eq!(held.get(&digest("same\n")), Some(&b"same\n"[..]));
        assert_eq!(held.get(&digest("other\n")), None);
        // A repository declared whole keeps every skill.
        loader.hold_skills(root, Some(Vec::new()));
        let read = read_catalogue_knowing(root, "repo", true, HashMap::new(), loader.hold.get(root).cloned());
        loader.apply_catalogue(&mut db, root, "repo", read);
        assert_eq!(loader.take_held().len(), 2);
    }

    #[test]
    fn a_repositorys_identity_is_its_resolved_path_links_included() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let root = temporary.path().canonicalize().expect("resolve");
        std::fs::create_dir_all(root.join("projects/acme/real")).expect("mkdir");
        std::os::unix::fs::symlink(root.join("projects/acme/real"), root.join("projects/acme/link")).expect("link");
        let keys = PathKeys::default();
        let real = root.join("projects/acme/real").to_string_lossy().into_owned();
        assert_eq!(keys.path_key(&root.join("projects/acme/real")), real);
        assert_eq!(keys.path_key(&root.join("projects/acme/link")), real);
        assert_eq!(keys.path_key(&root.join("projects/acme/../acme/real")), real);
        let missing = root.join("projects/acme/missing");
        assert_eq!(keys.path_key(&missing), missing.to_string_lossy());
    }
}

#[cfg(test)]
mod sorted_tests {
    use super::*;
    use crate::home::observe::Stat;

    fn file(size: u64) -> Observed {
        Observed::File(Stat { size, modified_nanos: 1, inode: 2 }, [0; 32])
    }

    /// The observations sorted from scratch, as the cache lists them.
    fn sorted_whole(loader: &Loader) -> Vec<(PathBuf, Observed)> {
        let mut all: Vec<(PathBuf, Observed)> =
            loader.observed().iter().map(|(path, observed)| (path.clone(), *observed)).collect();
        all.sort_unstable_by(|a, b| a.0.as_os_str().cmp(b.0.as_os_str()));
        all
    }

    #[test]
    fn the_kept_sorted_observations_follow_every_change_and_sort_by_bytes() {
        let mut loader = Loader::default();
        // Byte order, not the components' order: `/a-c` sorts before `/a/b`.
        for (path, size) in [("/a/b", 1), ("/a-c", 2), ("/a", 3)] {
            loader.note(Path::new(path), file(size));
        }
        assert_eq!(*loader.sorted_observed(), sorted_whole(&loader));
        assert_eq!(loader.sorted_observed()[0].0, Path::new("/a"));
        assert_eq!(loader.sorted_observed()[1].0, Path::new("/a-c"));
        // Changed, added and observed the same again, one by one.
        let kept = loader.sorted_observed();
        loader.note(Path::new("/a-c"), file(20));
        loader.note(Path::new("/a/a"), Observed::Missing);
        loader.note(Path::new("/a"), file(3));
        loader.note(Path::new("/0"), Observed::Unreachable);
        assert_eq!(*loader.sorted_observed(), sorted_whole(&loader));
        assert_ne!(*kept, *loader.sorted_observed(), "a list handed out before is not changed under its holder");
        // Past the number kept one by one, the list is made again whole.
        for index in 0..SORTED_CHANGES_KEPT + 10 {
            loader.note(Path::new(&format!("/many/{index}")), file(index as u64));
        }
        assert!(loader.changed.is_none());
        assert_eq!(*loader.sorted_observed(), sorted_whole(&loader));
        loader.note(Path::new("/many/7"), Observed::Missing);
        assert_eq!(*loader.sorted_observed(), sorted_whole(&loader));
    }
}
