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

use crate::blame::Blame;

/// The record of what an output directory owns.
pub const OWNERSHIP_FILE: &str = ".acompose-owned.json";
/// The journal folder of a transaction in progress.
pub const JOURNAL_DIR: &str = ".acompose-transaction";
/// The lock file that serializes writers of one directory.
pub const LOCK_FILE: &str = ".acompose.lock";
const OWNERSHIP_FORMAT: &str = "acompose.ownership.v1";

/// A filesystem step the transaction is about to take; fault injection hooks see each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    CreateDirectory(&'a Path),
    WriteTemporary(&'a Path),
    MoveAside(&'a Path),
    Rename(&'a Path),
    Journal,
}

/// Called before every mutating step; returning an error makes that step fail.
pub trait Hooks {
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

#[derive(Debug, thiserror::Error)]
pub enum TransactionError {
    /// The directory or a path in it is not ours to write (symlink, foreign file, a
    /// file where a folder belongs). Nothing was changed.
    #[error("refused to write `{}`: {reason}", path.display())]
    Refused { path: PathBuf, reason: String },
    /// An I/O failure. `restored` tells whether something had been changed and was rolled
    /// back (the message says "restored" only then); otherwise nothing was changed.
    #[error(
        "cannot write `{}`: {}; {}",
        path.display(),
        crate::load::error_kind(error),
        if *restored { "the previous contents were restored" } else { "nothing was changed" }
    )]
    Io { path: PathBuf, error: io::Error, restored: bool },
    /// An I/O failure while restoring; the journal folder was kept for the next run.
    #[error(
        "cannot restore `{}`: {}; the journal in `{JOURNAL_DIR}` is kept and the next run finishes the restore",
        path.display(),
        crate::load::error_kind(error)
    )]
    RollbackFailed { path: PathBuf, error: io::Error },
    /// Another writer held the lock for longer than the timeout.
    #[error("another convergence holds `{}`; gave up after {} s", path.display(), waited.as_secs())]
    LockTimeout { path: PathBuf, waited: Duration },
}

impl TransactionError {
    /// Whose fault it is: refusals are the input's, I/O failures the environment's.
    pub fn blame(&self) -> Blame {
        match self {
            TransactionError::Refused { .. } => Blame::Input,
            TransactionError::Io { .. }
            | TransactionError::RollbackFailed { .. }
            | TransactionError::LockTimeout { .. } => Blame::Environment,
        }
    }
}

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

fn is_reserved(path: &str) -> bool {
    let first = path.split('/').next().unwrap_or_default();
    matches!(first, OWNERSHIP_FILE | JOURNAL_DIR | LOCK_FILE)
}

/// A relative, `/`-separated path without `.`, `..` or empty segments.
fn is_safe_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && path.split('/').all(|segment| !segment.is_empty() && segment != "." && segment != "..")
        && !path.contains('\\')
        && !path.contains('\0')
}

fn ownership_bytes(paths: &BTreeSet<String>) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Record<'a> {
        format: &'static str,
        files: Vec<&'a str>,
    }
    acompose_engine::snapshot::to_json_bytes(&Record {
        format: OWNERSHIP_FORMAT,
        files: paths.iter().map(String::as_str).collect(),
    })
}

fn read_ownership(root: &Path) -> Result<BTreeSet<String>, TransactionError> {
    let path = root.join(OWNERSHIP_FILE);
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
    }
    let record: Record = serde_json::from_slice(&bytes)
        .map_err(|_| refused(&path, "the ownership record is not valid; remove it to adopt the directory again"))?;
    if record.format != OWNERSHIP_FORMAT || record.files.iter().any(|file| !is_safe_relative(file) || is_reserved(file))
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
}

/// Looks at `root/relative` without following symlinks; refuses anything that is not a
/// regular file or missing, and any ancestor that is not a real directory.
fn inspect(root: &Path, relative: &str) -> Result<Existing, TransactionError> {
    let mut current = root.to_path_buf();
    let segments: Vec<&str> = relative.split('/').collect();
    for (index, segment) in segments.iter().enumerate() {
        current.push(segment);
        let last = index + 1 == segments.len();
        match fs::symlink_metadata(&current) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Existing::Missing),
            Err(error) => return Err(io_error(&current)(error)),
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
fn recover(root: &Path) -> Result<bool, TransactionError> {
    let directory = root.join(JOURNAL_DIR);
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

/// What a transaction will do, decided before anything is touched.
struct Plan<'a> {
    /// Files to write, with whether one is there already (and owned).
    writes: Vec<(&'a OutputFile, bool)>,
    removals: Vec<String>,
    unchanged: usize,
    /// The new ownership record, and whether it differs from the one on disk.
    record: Vec<u8>,
    record_changed: bool,
}

/// Plans a transaction: refuses unsafe paths and foreign files in the way.
fn plan<'a>(root: &Path, files: &'a [OutputFile], root_exists: bool) -> Result<Plan<'a>, TransactionError> {
    let owned = if root_exists { read_ownership(root)? } else { BTreeSet::new() };
    let mut writes: Vec<(&OutputFile, bool)> = Vec::new();
    let mut unchanged = 0;
    let mut planned = BTreeSet::new();
    for file in files {
        if !is_safe_relative(&file.path) || is_reserved(&file.path) {
            return Err(refused(&root.join(&file.path), "the output names an unsafe path"));
        }
        planned.insert(file.path.clone());
        match if root_exists { inspect(root, &file.path)? } else { Existing::Missing } {
            Existing::File(bytes) if bytes == file.bytes => unchanged += 1,
            Existing::File(_) if owned.contains(&file.path) => writes.push((file, true)),
            Existing::File(_) => {
                return Err(refused(&root.join(&file.path), "a file this directory does not own is in the way"));
            }
            Existing::Missing => writes.push((file, false)),
        }
    }
    let mut removals = Vec::new();
    for path in owned.difference(&planned) {
        if let Existing::File(_) = inspect(root, path)? {
            removals.push(path.clone());
        }
    }
    let record = ownership_bytes(&planned);
    let record_changed = match if root_exists { inspect(root, OWNERSHIP_FILE)? } else { Existing::Missing } {
        Existing::File(bytes) => bytes != record,
        Existing::Missing => true,
    };
    Ok(Plan { writes, removals, unchanged, record, record_changed })
}

/// A file ready to be swapped in: its temporary is written and flushed, and a backup
/// name is reserved when an old file must be moved aside.
struct Staged {
    path: String,
    temporary: PathBuf,
    backup: Option<String>,
}

impl Journal<'_> {
    /// Stages one file: missing folders (one level at a time, journaled), then a flushed
    /// temporary in the journal folder. Nothing visible changes yet.
    fn stage_file(
        &mut self,
        file: &OutputFile,
        exists: bool,
        hooks: &mut dyn Hooks,
    ) -> Result<Staged, TransactionError> {
        let mut prefix = String::new();
        let segments: Vec<&str> = file.path.split('/').collect();
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
        crate::atomic::write_new_synced(&temporary, &file.bytes).map_err(io_error(&temporary))?;
        let backup = exists.then(|| self.next_backup());
        Ok(Staged { path: file.path.clone(), temporary, backup })
    }

    /// Journals several actions with one write and one flush (each undo tolerates an
    /// action that never happened, so intent may be journaled ahead of the steps).
    fn record_all(&mut self, actions: Vec<Action>, hooks: &mut dyn Hooks) -> Result<(), TransactionError> {
        if actions.is_empty() {
            return Ok(());
        }
        let path = self.directory.join("journal");
        self.open(hooks)?;
        hooks.before(Step::Journal).map_err(io_error(&path))?;
        let text: String = actions.iter().map(Action::line).collect();
        if let Some(file) = self.file.as_mut() {
            file.write_all(text.as_bytes()).and_then(|()| file.sync_data()).map_err(io_error(&path))?;
        }
        self.actions.extend(actions);
        Ok(())
    }

    /// Swaps staged files in and moves removed ones aside, back to back: every step was
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

/// Makes `root` hold exactly `files` (plus foreign files that are not in the way).
pub fn apply(root: &Path, files: &[OutputFile], hooks: &mut dyn Hooks) -> Result<Outcome, TransactionError> {
    let mut outcomes = apply_unit(root, &[Part { folder: "", files }], hooks)?;
    Ok(outcomes.pop().unwrap_or_default())
}

/// One owned output directory of a unit: its folder relative to the unit's root (`""`
/// for the root itself) and exactly the files it must hold.
#[derive(Debug, Clone, Copy)]
pub struct Part<'a> {
    pub folder: &'a str,
    pub files: &'a [OutputFile],
}

/// A part's plan, with its paths made relative to the unit's root.
struct PartPlan {
    writes: Vec<(OutputFile, bool, bool)>,
    removals: Vec<String>,
    outcome: Outcome,
}

fn under(folder: &str, path: &str) -> String {
    if folder.is_empty() { path.to_owned() } else { format!("{folder}/{path}") }
}

/// Plans one part: recovers what an older run left in its own journal, refuses what is
/// in the way, and lists its writes (the ownership record last) and removals.
fn plan_part(root: &Path, part: &Part<'_>) -> Result<PartPlan, TransactionError> {
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
    let recovered = if exists && !part.folder.is_empty() { recover(&directory)? } else { false };
    let plan = plan(&directory, part.files, exists)?;
    let mut writes: Vec<(OutputFile, bool, bool)> = plan
        .writes
        .iter()
        .map(|(file, existed)| {
            (OutputFile { path: under(part.folder, &file.path), bytes: file.bytes.clone() }, *existed, true)
        })
        .collect();
    if plan.record_changed {
        let record = OutputFile { path: under(part.folder, OWNERSHIP_FILE), bytes: plan.record };
        writes.push((record, directory.join(OWNERSHIP_FILE).is_file(), false));
    }
    Ok(PartPlan {
        writes,
        removals: plan.removals.iter().map(|path| under(part.folder, path)).collect(),
        outcome: Outcome { recovered, unchanged: plan.unchanged, ..Outcome::default() },
    })
}

/// Makes every part hold exactly its files, as one unit: one journal in `root` covers
/// every write and removal of every part, so a failure (or a crash, recovered by the next
/// run) leaves all parts as they were, and success leaves all of them new. Returns one
/// outcome per part, in order, with paths relative to the part.
pub fn apply_unit(root: &Path, parts: &[Part<'_>], hooks: &mut dyn Hooks) -> Result<Vec<Outcome>, TransactionError> {
    match fs::symlink_metadata(root) {
        Ok(metadata) if metadata.file_type().is_symlink() => return Err(refused(root, "it is a symbolic link")),
        Ok(metadata) if !metadata.is_dir() => return Err(refused(root, "it is not a directory")),
        Ok(_) | Err(_) => {}
    }
    let root_exists = root.is_dir();
    let recovered = if root_exists { recover(root)? } else { false };
    let mut plans = parts.iter().map(|part| plan_part(root, part)).collect::<Result<Vec<_>, _>>()?;
    if let Some(first) = plans.first_mut() {
        first.outcome.recovered |= recovered;
    }
    if plans.iter().all(|plan| plan.writes.is_empty() && plan.removals.is_empty()) {
        return Ok(plans.into_iter().map(|plan| plan.outcome).collect());
    }
    let mut journal = Journal {
        root,
        directory: root.join(JOURNAL_DIR),
        file: None,
        actions: Vec::new(),
        backups: 0,
        temporaries: 0,
        changed: false,
    };
    let mut created_root = false;
    let mut removed = Vec::new();
    let result = (|| -> Result<(), TransactionError> {
        if !root_exists {
            hooks.before(Step::CreateDirectory(root)).map_err(io_error(root))?;
            fs::create_dir_all(root).map_err(io_error(root))?;
            created_root = true;
        }
        // Stage every file, journal every swap in one write, then swap them all.
        let mut staged = Vec::new();
        let mut removals = Vec::new();
        for (plan, part) in plans.iter_mut().zip(parts) {
            for (file, exists, counted) in &plan.writes {
                staged.push(journal.stage_file(file, *exists, hooks)?);
                if *counted {
                    plan.outcome.written.push(relative_to(part.folder, &file.path));
                }
            }
            for path in &plan.removals {
                removals.push((path.clone(), journal.next_backup()));
                plan.outcome.removed.push(relative_to(part.folder, path));
                removed.push(path.clone());
            }
        }
        let mut intent: Vec<Action> = staged
            .iter()
            .map(|file| match &file.backup {
                Some(backup) => Action::Replaced(file.path.clone(), backup.clone()),
                None => Action::Created(file.path.clone()),
            })
            .collect();
        intent.extend(removals.iter().map(|(path, backup)| Action::Removed(path.clone(), backup.clone())));
        journal.record_all(intent, hooks)?;
        journal.swap(&staged, &removals, hooks)?;
        journal.record(Action::Committed, hooks)?;
        Ok(())
    })();
    match result {
        Ok(()) => {
            // Committed: the journal only holds backups now. A failure to delete them is
            // harmless (the next run sees the commit line and deletes them).
            let _ = fs::remove_dir_all(&journal.directory);
            remove_empty_folders(root, &removed);
            Ok(plans.into_iter().map(|plan| plan.outcome).collect())
        }
        Err(mut error) => {
            roll_back(journal.root, &journal.directory, &journal.actions)?;
            let _ = fs::remove_dir_all(&journal.directory);
            if created_root {
                let _ = fs::remove_dir(root);
            }
            if let TransactionError::Io { restored, .. } = &mut error {
                *restored = journal.changed || created_root;
            }
            Err(error)
        }
    }
}

fn relative_to(folder: &str, path: &str) -> String {
    if folder.is_empty() {
        path.to_owned()
    } else {
        path.strip_prefix(folder).and_then(|rest| rest.strip_prefix('/')).unwrap_or(path).to_owned()
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
    let path = directory.join(LOCK_FILE);
    if fs::symlink_metadata(&path).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
        return Err(refused(&path, "the lock file is a symbolic link"));
    }
    let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io_error(&path))?;
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
