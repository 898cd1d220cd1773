//! Transactional writing of an owned output directory.
//!
//! Every file is written to a temporary file in the directory's journal folder, flushed
//! and renamed into place. Files
//! whose bytes are unchanged are not touched (their mtime stays). Files the directory
//! owned before and no longer produces are removed. What the directory owns is recorded
//! in an ownership file; a file in the way that the record does not list is foreign and
//! is refused, never overwritten. Every replaced or removed file is first moved into a
//! journal folder, and every step is journaled before it happens, so any failure — or
//! a crash, recovered on the next run — restores the previous directory exactly.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use acompose_engine::OutputFile;
use rayon::prelude::*;

/// The record of what an output directory owns.
pub const OWNERSHIP_FILE: &str = ".acompose-owned.json";
pub use crate::error::JOURNAL_DIR;
/// The lock file that serializes writers of one directory.
pub const LOCK_FILE: &str = ".acompose.lock";
const OWNERSHIP_FORMAT: &str = "acompose.ownership.v1";

/// Where a transaction keeps its bookkeeping, relative to its root, and whether the
/// directory may hold symbolic links it made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bookkeeping {
    /// The ownership record (`/`-separated).
    pub record: &'static str,
    /// The journal folder; its parent must be the root or the record's folder.
    pub journal: &'static str,
    /// The `format` written into the record.
    pub format: &'static str,
    /// Whether entries may be links; without it any symbolic link is refused.
    pub links: bool,
}

/// The bookkeeping of an output directory (the artifact, the index, the plan).
pub const OUTPUT_DIRECTORY: Bookkeeping =
    Bookkeeping { record: OWNERSHIP_FILE, journal: JOURNAL_DIR, format: OWNERSHIP_FORMAT, links: false };

/// What one owned path holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content<'a> {
    Bytes(&'a [u8]),
    /// A symbolic link to this target (only where [`Bookkeeping::links`] allows).
    Link(&'a Path),
    /// Bytes written over a file the directory does not own — the user's own file with a
    /// block the caller manages in it — under the same journal, but never recorded as
    /// owned, so never removed by a later run.
    Shared(&'a [u8]),
}

/// One owned path and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    pub path: &'a str,
    pub content: Content<'a>,
}

impl<'a> Entry<'a> {
    pub fn file(file: &'a OutputFile) -> Self {
        Entry { path: &file.path, content: Content::Bytes(&file.bytes) }
    }
}

/// A filesystem step the transaction is about to take; fault injection hooks see each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    CreateDirectory(&'a Path),
    WriteTemporary(&'a Path),
    MoveAside(&'a Path),
    Rename(&'a Path),
    Journal,
    /// Every swap is done and visible, and the commit line is next: a caller's hooks may
    /// read the outputs back here, and a failure still rolls the whole unit back.
    Commit(&'a Path),
    /// Convergence is about to remove this stale bundle (after the prune's journal was
    /// written); a failure stops the prune there, as a kill would, and leaves its journal
    /// for the next run to finish.
    Prune(&'a Path),
}

/// Called before every mutating step; returning an error makes that step fail.
pub trait Hooks: Send {
    fn before(&mut self, step: Step<'_>) -> io::Result<()>;
}

/// The hooks of a real run: nothing fails on purpose.
pub struct NoFaults;

impl Hooks for NoFaults {
    fn before(&mut self, _step: Step<'_>) -> io::Result<()> {
        Ok(())
    }
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub written: Vec<String>,
    pub unchanged: usize,
    pub removed: Vec<String>,
    /// A previous run's interrupted transaction that was rolled back first.
    pub recovered: bool,
}

pub use crate::error::TransactionError;

fn refused(path: &Path, reason: impl Into<String>) -> TransactionError {
    TransactionError::Refused { path: path.to_path_buf(), reason: reason.into() }
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> TransactionError + '_ {
    move |error| TransactionError::Io { path: path.to_path_buf(), error, restored: false }
}

/// One journaled action, undone in reverse order on failure.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    CreatedDirectory(String),
    Created(String),
    Replaced(String, String),
    Removed(String, String),
    Committed,
}

impl Action {
    fn line(&self) -> String {
        match self {
            Action::CreatedDirectory(path) => format!("directory\t{path}\n"),
            Action::Created(path) => format!("created\t{path}\n"),
            Action::Replaced(path, backup) => format!("replaced\t{path}\t{backup}\n"),
            Action::Removed(path, backup) => format!("removed\t{path}\t{backup}\n"),
            Action::Committed => "committed\n".to_owned(),
        }
    }

    fn parse(line: &str) -> Option<Action> {
        let parts: Vec<&str> = line.split('\t').collect();
        match parts.as_slice() {
            ["directory", path] => Some(Action::CreatedDirectory((*path).to_owned())),
            ["created", path] => Some(Action::Created((*path).to_owned())),
            ["replaced", path, backup] => Some(Action::Replaced((*path).to_owned(), (*backup).to_owned())),
            ["removed", path, backup] => Some(Action::Removed((*path).to_owned(), (*backup).to_owned())),
            ["committed"] => Some(Action::Committed),
            _ => None,
        }
    }
}

fn first_segment(path: &str) -> &str {
    path.split('/').next().unwrap_or_default()
}

fn is_reserved(path: &str, books: &Bookkeeping) -> bool {
    let first = first_segment(path);
    first == LOCK_FILE || first == first_segment(books.record) || first == first_segment(books.journal)
}

/// A relative, `/`-separated path without `.`, `..` or empty segments.
fn is_safe_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && path.split('/').all(|segment| !segment.is_empty() && segment != "." && segment != "..")
        && !path.contains('\\')
        && !path.contains('\0')
}

fn ownership_bytes(paths: &BTreeSet<String>, books: &Bookkeeping, details: Option<&serde_json::Value>) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Record<'a> {
        format: &'static str,
        files: Vec<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        details: Option<&'a serde_json::Value>,
    }
    acompose_engine::snapshot::to_json_bytes(&Record {
        format: books.format,
        files: paths.iter().map(String::as_str).collect(),
        details,
    })
}

fn read_ownership(root: &Path, books: &Bookkeeping) -> Result<BTreeSet<String>, TransactionError> {
    let path = root.join(books.record);
    let metadata = match fs::symlink_metadata(&path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        Err(error) => return Err(io_error(&path)(error)),
    };
    if !metadata.is_file() {
        return Err(refused(&path, "the ownership record is not a regular file"));
    }
    let bytes = fs::read(&path).map_err(io_error(&path))?;
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Record {
        format: String,
        files: Vec<String>,
        // What the directory's owner says about it; the transaction only carries it.
        #[serde(default)]
        #[expect(dead_code, reason = "accepted so a record with details parses; read by its owner")]
        details: Option<serde_json::Value>,
    }
    let record: Record = serde_json::from_slice(&bytes)
        .map_err(|_| refused(&path, "the ownership record is not valid; remove it to adopt the directory again"))?;
    if record.format != books.format
        || record.files.iter().any(|file| !is_safe_relative(file) || is_reserved(file, books))
    {
        return Err(refused(
            &path,
            "the ownership record is not one this version wrote; remove it to adopt the directory again",
        ));
    }
    Ok(record.files.into_iter().collect())
}

enum Existing {
    Missing,
    File(Vec<u8>),
    Link(PathBuf),
}

/// Looks at `root/relative` without following symlinks; refuses anything that is not a
/// regular file (or, when `links`, a symbolic link) or missing, and any ancestor that is
/// not a real directory.
fn inspect(root: &Path, relative: &str, links: bool) -> Result<Existing, TransactionError> {
    let mut current = root.to_path_buf();
    let segments: Vec<&str> = relative.split('/').collect();
    for (index, segment) in segments.iter().enumerate() {
        current.push(segment);
        let last = index + 1 == segments.len();
        match fs::symlink_metadata(&current) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Existing::Missing),
            Err(error) => return Err(io_error(&current)(error)),
            Ok(metadata) if metadata.file_type().is_symlink() && last && links => {
                return fs::read_link(&current).map(Existing::Link).map_err(io_error(&current));
            }
            Ok(metadata) if metadata.file_type().is_symlink() => {
                return Err(refused(&current, "it is a symbolic link"));
            }
            Ok(metadata) if !last && !metadata.is_dir() => {
                return Err(refused(&current, "a file is in the way of a folder the output needs"));
            }
            Ok(metadata) if last && !metadata.is_file() => {
                return Err(refused(&current, "a folder is in the way of a file the output needs"));
            }
            Ok(_) => {}
        }
    }
    fs::read(&current).map(Existing::File).map_err(io_error(&current))
}

struct Journal<'a> {
    root: &'a Path,
    directory: PathBuf,
    file: Option<File>,
    actions: Vec<Action>,
    backups: usize,
    temporaries: usize,
    /// Whether anything outside the journal folder was changed (a folder created, a file
    /// moved or renamed): only then is a rollback a restore.
    changed: bool,
}

impl Journal<'_> {
    /// Creates the journal folder and file on first use.
    fn open(&mut self, hooks: &mut dyn Hooks) -> Result<(), TransactionError> {
        if self.file.is_none() {
            let path = self.directory.join("journal");
            hooks.before(Step::CreateDirectory(&self.directory)).map_err(io_error(&self.directory))?;
            fs::create_dir(&self.directory).map_err(io_error(&self.directory))?;
            let file = OpenOptions::new().create_new(true).append(true).open(&path).map_err(io_error(&path))?;
            self.file = Some(file);
        }
        Ok(())
    }

    fn next_temporary(&mut self) -> PathBuf {
        self.temporaries += 1;
        self.directory.join(format!("temporary-{}", self.temporaries))
    }

    fn record(&mut self, action: Action, hooks: &mut dyn Hooks) -> Result<(), TransactionError> {
        let path = self.directory.join("journal");
        self.open(hooks)?;
        hooks.before(Step::Journal).map_err(io_error(&path))?;
        if let Some(file) = self.file.as_mut() {
            file.write_all(action.line().as_bytes()).and_then(|()| file.sync_data()).map_err(io_error(&path))?;
        }
        self.actions.push(action);
        Ok(())
    }

    fn next_backup(&mut self) -> String {
        self.backups += 1;
        format!("backup-{}", self.backups)
    }
}

/// Undoes journaled actions in reverse. Each undo tolerates an action that never
/// happened (the journal line is written first).
fn roll_back(root: &Path, journal_directory: &Path, actions: &[Action]) -> Result<(), TransactionError> {
    if actions.contains(&Action::Committed) {
        return Ok(());
    }
    for action in actions.iter().rev() {
        match action {
            Action::Created(path) => match fs::remove_file(root.join(path)) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(TransactionError::RollbackFailed { path: root.join(path), error }),
            },
            Action::Replaced(path, backup) | Action::Removed(path, backup) => {
                let saved = journal_directory.join(backup);
                if saved.exists() {
                    fs::rename(&saved, root.join(path))
                        .map_err(|error| TransactionError::RollbackFailed { path: root.join(path), error })?;
                }
            }
            Action::CreatedDirectory(path) => match fs::remove_dir(root.join(path)) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(TransactionError::RollbackFailed { path: root.join(path), error }),
            },
            Action::Committed => {}
        }
    }
    Ok(())
}

/// Rolls back a transaction a previous run left behind (a crash mid-way).
fn recover(root: &Path, books: &Bookkeeping) -> Result<bool, TransactionError> {
    let directory = root.join(books.journal);
    let journal = directory.join("journal");
    match fs::symlink_metadata(&directory) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(io_error(&directory)(error)),
        Ok(metadata) if !metadata.is_dir() => return Err(refused(&directory, "the journal folder is not a folder")),
        Ok(_) => {}
    }
    let text = fs::read_to_string(&journal).unwrap_or_default();
    let actions: Vec<Action> = text.lines().filter_map(Action::parse).collect();
    if actions.iter().any(|action| match action {
        Action::Created(path)
        | Action::CreatedDirectory(path)
        | Action::Replaced(path, _)
        | Action::Removed(path, _) => !is_safe_relative(path),
        Action::Committed => false,
    }) {
        return Err(refused(&journal, "the journal names a path outside the directory"));
    }
    roll_back(root, &directory, &actions)?;
    fs::remove_dir_all(&directory).map_err(io_error(&directory))?;
    Ok(true)
}

/// Rolls back the transaction a stopped run left in `root`, if there is one; returns
/// whether there was. A writer that reads the directory's record before it writes (a
/// projection reads its previous record) calls this first, so that it reads the record
/// the rollback leaves.
pub fn recover_pending(root: &Path, books: &Bookkeeping) -> Result<bool, TransactionError> {
    recover(root, books)
}

/// Whether a stopped run left a transaction in `root` for the next one to roll back.
pub fn has_pending(root: &Path, books: &Bookkeeping) -> bool {
    fs::symlink_metadata(root.join(books.journal)).is_ok()
}

/// Replaces the `details` of the ownership record in `root`, keeping what it owns: for a
/// writer whose record says what it still has to do outside the directory (a
/// projection's changes to git's files), once that is done. Atomic; nothing else moves.
pub fn rewrite_details(root: &Path, books: &Bookkeeping, details: &serde_json::Value) -> Result<(), TransactionError> {
    let owned = read_ownership(root, books)?;
    let path = root.join(books.record);
    let folder = path.parent().unwrap_or(root);
    let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
    crate::home::atomic::replace(folder, name, &ownership_bytes(&owned, books, Some(details))).map_err(|error| {
        TransactionError::Io { path: path.clone(), error: io::Error::other(error.to_string()), restored: false }
    })
}

/// What a transaction will do, decided before anything is touched.
struct Plan<'a> {
    /// Entries to write, with whether one is there already (and owned).
    writes: Vec<(Entry<'a>, bool)>,
    removals: Vec<String>,
    unchanged: usize,
    /// The new ownership record, and whether it differs from the one on disk.
    record: Vec<u8>,
    record_changed: bool,
}

/// Plans a transaction: refuses unsafe paths and foreign files in the way.
fn plan<'a>(
    root: &Path,
    entries: &[Entry<'a>],
    books: &Bookkeeping,
    details: Option<&serde_json::Value>,
    root_exists: bool,
) -> Result<Plan<'a>, TransactionError> {
    let owned = if root_exists { read_ownership(root, books)? } else { BTreeSet::new() };
    let mut writes: Vec<(Entry<'a>, bool)> = Vec::new();
    let mut unchanged = 0;
    let mut planned = BTreeSet::new();
    let mut shared_paths = BTreeSet::new();
    for entry in entries {
        let full = || root.join(entry.path);
        if !is_safe_relative(entry.path) || is_reserved(entry.path, books) {
            return Err(refused(&full(), "the output names an unsafe path"));
        }
        if matches!(entry.content, Content::Link(_)) && !books.links {
            return Err(refused(&full(), "this directory holds no symbolic links"));
        }
        let shared = matches!(entry.content, Content::Shared(_));
        if shared {
            shared_paths.insert(entry.path);
        } else {
            planned.insert(entry.path.to_owned());
        }
        let existing = if root_exists { inspect(root, entry.path, books.links)? } else { Existing::Missing };
        let same = match (&existing, entry.content) {
            (Existing::File(bytes), Content::Bytes(wanted) | Content::Shared(wanted)) => bytes.as_slice() == wanted,
            (Existing::Link(target), Content::Link(wanted)) => target.as_path() == wanted,
            _ => false,
        };
        match existing {
            _ if same => unchanged += 1,
            Existing::Missing => writes.push((*entry, false)),
            _ if owned.contains(entry.path) => writes.push((*entry, true)),
            Existing::File(_) if shared => writes.push((*entry, true)),
            Existing::Link(_) => {
                return Err(refused(&full(), "a link this directory did not make is in the way"));
            }
            Existing::File(_) => {
                return Err(refused(&full(), "a file this directory does not own is in the way"));
            }
        }
    }
    let mut removals = Vec::new();
    for path in owned.difference(&planned).filter(|path| !shared_paths.contains(path.as_str())) {
        if !matches!(inspect(root, path, books.links)?, Existing::Missing) {
            removals.push(path.clone());
        }
    }
    let record = ownership_bytes(&planned, books, details);
    let record_changed = match if root_exists { inspect(root, books.record, false)? } else { Existing::Missing } {
        Existing::File(bytes) => bytes != record,
        Existing::Missing | Existing::Link(_) => true,
    };
    Ok(Plan { writes, removals, unchanged, record, record_changed })
}

/// What one staged path will hold, owned (parts of a unit are planned before any is
/// written).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owned {
    Bytes(Vec<u8>),
    Link(PathBuf),
}

impl Owned {
    fn of(content: Content<'_>) -> Self {
        match content {
            Content::Bytes(bytes) | Content::Shared(bytes) => Owned::Bytes(bytes.to_vec()),
            Content::Link(target) => Owned::Link(target.to_path_buf()),
        }
    }
}

/// A path ready to be swapped in: its temporary is written and flushed, and a backup
/// name is reserved when an old entry must be moved aside.
struct Staged {
    path: String,
    temporary: PathBuf,
    backup: Option<String>,
    /// A written temporary file, still to be flushed (links need no flush).
    file: Option<File>,
}

impl Journal<'_> {
    /// Stages one path: missing folders (one level at a time, journaled), then a flushed
    /// temporary (or a link) in the journal folder. Nothing visible changes yet.
    fn stage(
        &mut self,
        path: &str,
        content: &Owned,
        exists: bool,
        hooks: &mut dyn Hooks,
    ) -> Result<Staged, TransactionError> {
        let mut prefix = String::new();
        let segments: Vec<&str> = path.split('/').collect();
        for segment in &segments[..segments.len() - 1] {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(segment);
            let folder = self.root.join(&prefix);
            if !folder.is_dir() {
                self.record_all(vec![Action::CreatedDirectory(prefix.clone())], hooks)?;
                hooks.before(Step::CreateDirectory(&folder)).map_err(io_error(&folder))?;
                fs::create_dir(&folder).map_err(io_error(&folder))?;
                self.changed = true;
            }
        }
        // Temporaries live in the journal folder, which this run created: nothing
        // foreign can sit at their names, and a crash leaves them where recovery
        // removes them.
        self.open(hooks)?;
        let temporary = self.next_temporary();
        hooks.before(Step::WriteTemporary(&temporary)).map_err(io_error(&temporary))?;
        let file = match content {
            Owned::Bytes(bytes) => crate::home::atomic::write_new(&temporary, bytes).map(Some),
            Owned::Link(link_target) => make_link(link_target, &temporary).map(|()| None),
        }
        .map_err(io_error(&temporary))?;
        let backup = exists.then(|| self.next_backup());
        Ok(Staged { path: path.to_owned(), temporary, backup, file })
    }

    /// Journals several actions with one write and one flush (each undo tolerates an
    /// action that never happened, so intent may be journaled ahead of the steps).
    fn record_all(&mut self, actions: Vec<Action>, hooks: &mut dyn Hooks) -> Result<(), TransactionError> {
        self.record_all_then(actions, hooks, &mut || Ok(()))
    }

    /// [`Journal::record_all`], running `alongside` while the journal is flushed.
    fn record_all_then(
        &mut self,
        actions: Vec<Action>,
        hooks: &mut dyn Hooks,
        alongside: &mut (dyn FnMut() -> Result<(), TransactionError> + Send),
    ) -> Result<(), TransactionError> {
        if actions.is_empty() {
            return alongside();
        }
        let path = self.directory.join("journal");
        self.open(hooks)?;
        hooks.before(Step::Journal).map_err(io_error(&path))?;
        let text: String = actions.iter().map(Action::line).collect();
        if let Some(file) = self.file.as_mut() {
            file.write_all(text.as_bytes()).map_err(io_error(&path))?;
            let file = &*file;
            let (journaled, other) = rayon::join(|| file.sync_data().map_err(io_error(&path)), alongside);
            journaled?;
            other?;
        } else {
            alongside()?;
        }
        self.actions.extend(actions);
        Ok(())
    }

    /// Swaps staged paths in and moves removed ones aside, back to back: every step was
    /// journaled before, so the outputs are mid-change for as short a time as renames take.
    fn swap(
        &mut self,
        staged: &[Staged],
        removals: &[(String, String)],
        hooks: &mut dyn Hooks,
    ) -> Result<(), TransactionError> {
        for file in staged {
            let target = self.root.join(&file.path);
            if let Some(backup) = &file.backup {
                hooks.before(Step::MoveAside(&target)).map_err(io_error(&target))?;
                fs::rename(&target, self.directory.join(backup)).map_err(io_error(&target))?;
                self.changed = true;
            }
            hooks.before(Step::Rename(&target)).map_err(io_error(&target))?;
            fs::rename(&file.temporary, &target).map_err(io_error(&target))?;
            self.changed = true;
        }
        for (path, backup) in removals {
            let target = self.root.join(path);
            hooks.before(Step::MoveAside(&target)).map_err(io_error(&target))?;
            fs::rename(&target, self.directory.join(backup)).map_err(io_error(&target))?;
            self.changed = true;
        }
        Ok(())
    }
}

#[cfg(unix)]
fn make_link(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn make_link(_target: &Path, _link: &Path) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "symbolic links need a Unix system; use copies"))
}

/// Makes `root` hold exactly `files` (plus foreign files that are not in the way).
pub fn apply(root: &Path, files: &[OutputFile], hooks: &mut dyn Hooks) -> Result<Outcome, TransactionError> {
    let mut outcomes = apply_unit(root, &[Part { folder: "", files }], hooks)?;
    Ok(outcomes.pop().unwrap_or_default())
}

/// Makes `root` hold exactly `entries`, keeping its books as `books` says and carrying
/// `details` in the ownership record.
pub fn apply_entries(
    root: &Path,
    entries: &[Entry<'_>],
    books: &Bookkeeping,
    details: Option<&serde_json::Value>,
    hooks: &mut dyn Hooks,
) -> Result<Outcome, TransactionError> {
    let mut outcomes = run_unit(root, &[UnitPart { folder: "", entries: entries.to_vec(), details }], books, hooks)?;
    Ok(outcomes.pop().unwrap_or_default())
}

/// One owned output directory of a unit: its folder relative to the unit's root (`""`
/// for the root itself) and exactly the files it must hold.
#[derive(Debug, Clone, Copy)]
pub struct Part<'a> {
    pub folder: &'a str,
    pub files: &'a [OutputFile],
}

/// Makes every part hold exactly its files, as one unit: one journal in `root` covers
/// every write and removal of every part, so a failure (or a crash, recovered by the next
/// run) leaves all parts as they were, and success leaves all of them new. Returns one
/// outcome per part, in order, with paths relative to the part.
pub fn apply_unit(root: &Path, parts: &[Part<'_>], hooks: &mut dyn Hooks) -> Result<Vec<Outcome>, TransactionError> {
    run_unit(root, &unit_parts(parts), &OUTPUT_DIRECTORY, hooks)
}

/// The parts of a unit of output files, as the transaction plans them.
fn unit_parts<'a>(parts: &[Part<'a>]) -> Vec<UnitPart<'a>> {
    parts
        .iter()
        .map(|part| UnitPart {
            folder: part.folder,
            entries: part.files.iter().map(Entry::file).collect(),
            details: None,
        })
        .collect()
}

/// How many written temporaries wait, open, to be flushed together.
const OPEN_TEMPORARIES: usize = 32;

/// Flushes written temporaries to disk, all at once (a unit then waits for about one
/// flush, not one per file), and closes them.
fn flush_temporaries(staged: &mut [Staged]) -> Result<(), TransactionError> {
    staged.par_iter_mut().try_for_each(|file| match file.file.take() {
        Some(handle) => handle.sync_all().map_err(io_error(&file.temporary)),
        None => Ok(()),
    })
}

/// A part of a unit as the transaction plans it.
struct UnitPart<'a> {
    folder: &'a str,
    entries: Vec<Entry<'a>>,
    details: Option<&'a serde_json::Value>,
}

/// A part's plan, with its paths made relative to the unit's root: (path, content,
/// whether something owned is there, whether it counts as written output).
struct PartPlan {
    writes: Vec<(String, Owned, bool, bool)>,
    removals: Vec<String>,
    outcome: Outcome,
}

fn under(folder: &str, path: &str) -> String {
    if folder.is_empty() { path.to_owned() } else { format!("{folder}/{path}") }
}

fn relative_to(folder: &str, path: &str) -> String {
    if folder.is_empty() {
        path.to_owned()
    } else {
        path.strip_prefix(folder).and_then(|rest| rest.strip_prefix('/')).unwrap_or(path).to_owned()
    }
}

/// Plans one part: recovers what an older run left in its own journal, refuses what is
/// in the way, and lists its writes (the ownership record last) and removals.
fn plan_part(root: &Path, part: &UnitPart<'_>, books: &Bookkeeping) -> Result<PartPlan, TransactionError> {
    if !part.folder.is_empty() && !is_safe_relative(part.folder) {
        return Err(refused(&root.join(part.folder), "the output names an unsafe path"));
    }
    let directory = if part.folder.is_empty() { root.to_path_buf() } else { root.join(part.folder) };
    match fs::symlink_metadata(&directory) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            return Err(refused(&directory, "it is a symbolic link"));
        }
        Ok(metadata) if !metadata.is_dir() => return Err(refused(&directory, "it is not a directory")),
        Ok(_) | Err(_) => {}
    }
    let exists = directory.is_dir();
    let recovered = if exists && !part.folder.is_empty() { recover(&directory, books)? } else { false };
    let plan = plan(&directory, &part.entries, books, part.details, exists)?;
    let mut writes: Vec<(String, Owned, bool, bool)> = plan
        .writes
        .iter()
        .map(|(entry, existed)| (under(part.folder, entry.path), Owned::of(entry.content), *existed, true))
        .collect();
    if plan.record_changed {
        let existed = directory.join(books.record).is_file();
        writes.push((under(part.folder, books.record), Owned::Bytes(plan.record), existed, false));
    }
    Ok(PartPlan {
        writes,
        removals: plan.removals.iter().map(|path| under(part.folder, path)).collect(),
        outcome: Outcome { recovered, unchanged: plan.unchanged, ..Outcome::default() },
    })
}

/// Every write of a unit staged: the temporaries (those before `flushed` on disk), and the
/// removals with the backup names they will be moved to.
struct StagedUnit {
    staged: Vec<Staged>,
    flushed: usize,
    removals: Vec<(String, String)>,
    removed: Vec<String>,
}

/// Stages every write of every part and fills in each part's written and removed paths.
/// With `flush_all`, every temporary is on disk when it returns; otherwise the last ones
/// are flushed by [`swap_staged`], beside the journal.
fn stage_all(
    journal: &mut Journal<'_>,
    plans: &mut [PartPlan],
    parts: &[UnitPart<'_>],
    flush_all: bool,
    hooks: &mut dyn Hooks,
) -> Result<StagedUnit, TransactionError> {
    let mut staged = Vec::new();
    let mut flushed = 0;
    let mut removals = Vec::new();
    let mut removed = Vec::new();
    for (plan, part) in plans.iter_mut().zip(parts) {
        for (path, content, exists, counted) in &plan.writes {
            staged.push(journal.stage(path, content, *exists, hooks)?);
            if staged.len() - flushed >= OPEN_TEMPORARIES {
                flush_temporaries(&mut staged[flushed..])?;
                flushed = staged.len();
            }
            if *counted {
                plan.outcome.written.push(relative_to(part.folder, path));
            }
        }
        for path in &plan.removals {
            removals.push((path.clone(), journal.next_backup()));
            plan.outcome.removed.push(relative_to(part.folder, path));
            removed.push(path.clone());
        }
    }
    if flush_all {
        flush_temporaries(&mut staged[flushed..])?;
        flushed = staged.len();
    }
    Ok(StagedUnit { staged, flushed, removals, removed })
}

/// Journals every swap of a staged unit in one write, swaps them all and journals the
/// commit; returns every removed path relative to the root.
fn swap_staged(
    journal: &mut Journal<'_>,
    unit: StagedUnit,
    hooks: &mut dyn Hooks,
) -> Result<Vec<String>, TransactionError> {
    let StagedUnit { mut staged, flushed, removals, removed } = unit;
    let mut intent: Vec<Action> = staged
        .iter()
        .map(|file| match &file.backup {
            Some(backup) => Action::Replaced(file.path.clone(), backup.clone()),
            None => Action::Created(file.path.clone()),
        })
        .collect();
    intent.extend(removals.iter().map(|(path, backup)| Action::Removed(path.clone(), backup.clone())));
    // The intent and every temporary are on disk before the first swap: they are flushed
    // together (an undo tolerates a temporary or a backup that never came to be, so the
    // journal may reach the disk first).
    journal.record_all_then(intent, hooks, &mut || flush_temporaries(&mut staged[flushed..]))?;
    journal.swap(&staged, &removals, hooks)?;
    let root = journal.root;
    hooks.before(Step::Commit(root)).map_err(io_error(root))?;
    journal.record(Action::Committed, hooks)?;
    Ok(removed)
}

/// The unit behind [`apply_unit`] and [`apply_entries`]: one journal, kept as `books`
/// says, for every part.
fn run_unit(
    root: &Path,
    parts: &[UnitPart<'_>],
    books: &Bookkeeping,
    hooks: &mut dyn Hooks,
) -> Result<Vec<Outcome>, TransactionError> {
    prepare_unit(root, parts, books, false, hooks)?.commit(hooks)
}

/// A unit planned and staged, nothing visible swapped yet: [`Prepared::commit`] swaps it
/// in, and dropping it uncommitted rolls back what staging did (folders it created, the
/// journal folder).
pub struct Prepared<'r> {
    root: &'r Path,
    plans: Vec<PartPlan>,
    /// `None` when there is nothing to write or remove.
    work: Option<(Journal<'r>, StagedUnit)>,
    created_root: bool,
    /// The journal's parent when this unit created it.
    created_journal_parent: Option<PathBuf>,
}

/// Plans a unit and stages every write of it, with every temporary flushed, so that what
/// is left for [`Prepared::commit`] is the journal, the swaps and the commit. A writer
/// whose outputs must wait for other work (the index of bundles still being written)
/// prepares beside that work and commits after it.
pub fn prepare<'r>(
    root: &'r Path,
    parts: &[Part<'_>],
    hooks: &mut dyn Hooks,
) -> Result<Prepared<'r>, TransactionError> {
    prepare_unit(root, &unit_parts(parts), &OUTPUT_DIRECTORY, true, hooks)
}

fn prepare_unit<'r>(
    root: &'r Path,
    parts: &[UnitPart<'_>],
    books: &Bookkeeping,
    flush_all: bool,
    hooks: &mut dyn Hooks,
) -> Result<Prepared<'r>, TransactionError> {
    match fs::symlink_metadata(root) {
        Ok(metadata) if metadata.file_type().is_symlink() => return Err(refused(root, "it is a symbolic link")),
        Ok(metadata) if !metadata.is_dir() => return Err(refused(root, "it is not a directory")),
        Ok(_) | Err(_) => {}
    }
    let root_exists = root.is_dir();
    let recovered = if root_exists { recover(root, books)? } else { false };
    let mut plans = parts.iter().map(|part| plan_part(root, part, books)).collect::<Result<Vec<_>, _>>()?;
    if let Some(first) = plans.first_mut() {
        first.outcome.recovered |= recovered;
    }
    let mut prepared =
        Prepared { root, plans: Vec::new(), work: None, created_root: false, created_journal_parent: None };
    if plans.iter().all(|plan| plan.writes.is_empty() && plan.removals.is_empty()) {
        prepared.plans = plans;
        return Ok(prepared);
    }
    let mut journal = Journal {
        root,
        directory: root.join(books.journal),
        file: None,
        actions: Vec::new(),
        backups: 0,
        temporaries: 0,
        changed: false,
    };
    // A journal inside the record's folder needs that folder before the first step.
    let journal_parent = journal.directory.parent().filter(|parent| *parent != root).map(Path::to_path_buf);
    let staged = (|| -> Result<StagedUnit, TransactionError> {
        if !root_exists {
            hooks.before(Step::CreateDirectory(root)).map_err(io_error(root))?;
            fs::create_dir_all(root).map_err(io_error(root))?;
            prepared.created_root = true;
        }
        if let Some(parent) = journal_parent.as_deref().filter(|parent| !parent.is_dir()) {
            hooks.before(Step::CreateDirectory(parent)).map_err(io_error(parent))?;
            fs::create_dir(parent).map_err(io_error(parent))?;
            prepared.created_journal_parent = Some(parent.to_path_buf());
        }
        stage_all(&mut journal, &mut plans, parts, flush_all, hooks)
    })();
    match staged {
        Ok(unit) => {
            prepared.plans = plans;
            prepared.work = Some((journal, unit));
            Ok(prepared)
        }
        Err(error) => Err(prepared.roll_back(journal, error)),
    }
}

impl Prepared<'_> {
    /// Swaps every staged write in and removes what goes, as one unit (a failure, or a
    /// crash recovered by the next run, leaves every part as it was). Returns one outcome
    /// per part, in order, with paths relative to the part.
    pub fn commit(mut self, hooks: &mut dyn Hooks) -> Result<Vec<Outcome>, TransactionError> {
        let Some((mut journal, unit)) = self.work.take() else {
            return Ok(std::mem::take(&mut self.plans).into_iter().map(|plan| plan.outcome).collect());
        };
        match swap_staged(&mut journal, unit, hooks) {
            Ok(removed) => {
                // Committed: the journal only holds backups now. A failure to delete them
                // is harmless (the next run sees the commit line and deletes them).
                let _ = fs::remove_dir_all(&journal.directory);
                remove_empty_folders(self.root, &removed);
                Ok(std::mem::take(&mut self.plans).into_iter().map(|plan| plan.outcome).collect())
            }
            Err(error) => Err(self.roll_back(journal, error)),
        }
    }

    /// Undoes what the journal says was done, then removes the journal folder and what
    /// this unit created for it. A failed undo keeps the journal for the next run.
    fn undo(&mut self, journal: &Journal<'_>) -> Result<(), TransactionError> {
        roll_back(journal.root, &journal.directory, &journal.actions)?;
        let _ = fs::remove_dir_all(&journal.directory);
        if let Some(parent) = self.created_journal_parent.take() {
            let _ = fs::remove_dir(parent);
        }
        if self.created_root {
            let _ = fs::remove_dir(self.root);
        }
        Ok(())
    }

    /// [`Prepared::undo`] after `error`; returns `error`, telling whether anything had
    /// to be restored (or the failure to restore).
    fn roll_back(&mut self, journal: Journal<'_>, mut error: TransactionError) -> TransactionError {
        if let Err(failed) = self.undo(&journal) {
            return failed;
        }
        if let TransactionError::Io { restored, .. } = &mut error {
            *restored = journal.changed || self.created_root;
        }
        error
    }
}

impl Drop for Prepared<'_> {
    /// An uncommitted unit changed nothing visible but the folders its staging made:
    /// they go with the journal folder.
    fn drop(&mut self) {
        if let Some((journal, _)) = self.work.take() {
            let _ = self.undo(&journal);
        }
    }
}

/// Removes folders left empty by removed files (never `root` itself).
fn remove_empty_folders(root: &Path, removed: &[String]) {
    for path in removed {
        let mut current = root.join(path);
        while current.pop() && current != root {
            if fs::remove_dir(&current).is_err() {
                break;
            }
        }
    }
}

/// An exclusive lock on `directory/.acompose.lock`, held until dropped.
pub struct Lock {
    _file: File,
}

/// Takes the lock, waiting up to `timeout` for another writer to finish.
pub fn lock(directory: &Path, timeout: Duration) -> Result<Lock, TransactionError> {
    lock_file(&directory.join(LOCK_FILE), timeout)
}

/// Takes an exclusive lock on the file at `path` (created when missing).
pub fn lock_file(path: &Path, timeout: Duration) -> Result<Lock, TransactionError> {
    let path = path.to_path_buf();
    if fs::symlink_metadata(&path).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
        return Err(refused(&path, "the lock file is a symbolic link"));
    }
    let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io_error(&path))?;
    wait_for_lock(file, path, timeout)
}

/// Takes an exclusive lock on a directory itself, so that locking leaves no file in it
/// (a projection target is the user's folder).
pub fn lock_directory_itself(directory: &Path, timeout: Duration) -> Result<Lock, TransactionError> {
    let file = File::open(directory).map_err(io_error(directory))?;
    wait_for_lock(file, directory.to_path_buf(), timeout)
}

fn wait_for_lock(file: File, path: PathBuf, timeout: Duration) -> Result<Lock, TransactionError> {
    let started = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Lock { _file: file }),
            Err(fs::TryLockError::WouldBlock) if started.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(25));
            }
            Err(fs::TryLockError::WouldBlock) => return Err(TransactionError::LockTimeout { path, waited: timeout }),
            Err(fs::TryLockError::Error(error)) => return Err(io_error(&path)(error)),
        }
    }
}
