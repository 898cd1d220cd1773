//! Disk access for `acompose people`: reading a workspace into the engine's inputs and
//! writing Person files atomically. Symlinks are refused on the workspace itself and on
//! every folder and file read or written here, before anything behind them is touched.
//! Nothing here validates content; that is the engine's job.

use std::fs::{self, File};
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

use acompose_people::contract::{self, ContractFiles};
use acompose_people::workspace::{PEOPLE_DIRECTORY, TEMPLATES_DIRECTORY};
use acompose_people::{Diagnostic, MAX_FILE_BYTES, SourceFile, WorkspaceFiles, finding};

use crate::home::atomic::{At as _, FileError, Result};
pub use crate::home::atomic::{create_new, replace};

/// Why a command stopped before finishing.
#[derive(Debug)]
pub enum Stop {
    /// Problems in the user's files (or refused symlinks): exit 1.
    Findings(Vec<Diagnostic>),
    /// Invalid input that is not a file problem (an unknown id, an existing file): exit 1.
    Invalid(String),
    /// A failed check whose report was already printed: exit 1.
    Reported,
    /// The environment failed (I/O): exit 3.
    Io(FileError),
}

impl From<FileError> for Stop {
    fn from(error: FileError) -> Self {
        Stop::Io(error)
    }
}

/// A workspace folder that is known to be a real directory, not a symlink.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub root: PathBuf,
}

/// What is at a path, without following a symlink.
enum Entry {
    Missing,
    Symlink,
    Directory,
    File,
    Other,
}

fn entry(path: &Path) -> Result<Entry> {
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => Ok(Entry::Symlink),
        Ok(metadata) if metadata.is_dir() => Ok(Entry::Directory),
        Ok(metadata) if metadata.is_file() => Ok(Entry::File),
        Ok(_) => Ok(Entry::Other),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Entry::Missing),
        Err(error) => Err(FileError::caused(path, format!("cannot inspect `{}`", path.display()), error)),
    }
}

/// Whether a collection reads the workspace's contract files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Contract {
    Read,
    Left,
}

impl Workspace {
    /// Opens an existing workspace folder, refusing a symlink. Only the folder itself is
    /// checked, not its parents (system folders such as `/tmp` may be links).
    pub fn open(root: &Path) -> Result<Self, Stop> {
        match entry(root)? {
            Entry::Directory => Ok(Self { root: root.to_path_buf() }),
            Entry::Symlink => Err(Stop::Findings(vec![finding::symlink_refused(&workspace_label(root))])),
            Entry::Missing => {
                Err(Stop::Io(FileError::new(root, format!("workspace `{}` does not exist", root.display()))))
            }
            Entry::File | Entry::Other => {
                Err(Stop::Io(FileError::new(root, format!("workspace `{}` is not a folder", root.display()))))
            }
        }
    }

    /// Opens a People workspace: an existing folder holding `people/` (what `acompose
    /// people init` makes). Any other folder is refused, so a command run in the wrong
    /// folder says so instead of reporting an empty workspace.
    pub fn open_initialised(root: &Path) -> Result<Self, Stop> {
        let workspace = Self::open(root)?;
        match entry(&workspace.path(PEOPLE_DIRECTORY))? {
            Entry::Directory | Entry::Symlink => Ok(workspace),
            _ => Err(Stop::Invalid(format!(
                "`{}` is not a People workspace: it has no `{PEOPLE_DIRECTORY}/` folder; run `acompose people init` there, or pass `--workspace DIR`",
                acompose_people::printable(&root.display().to_string())
            ))),
        }
    }

    /// Opens a workspace folder, creating it (and its parents) when missing.
    pub fn create(root: &Path) -> Result<Self, Stop> {
        if let Entry::Missing = entry(root)? {
            fs::create_dir_all(root).at(root, || format!("cannot create workspace `{}`", root.display()))?;
        }
        Self::open(root)
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        relative.split('/').fold(self.root.clone(), |path, part| path.join(part))
    }

    /// A folder of the workspace: `Ok(false)` when missing, refused when a symlink.
    fn folder(&self, relative: &str, refused: &mut Vec<Diagnostic>) -> Result<bool> {
        match entry(&self.path(relative))? {
            Entry::Directory => Ok(true),
            Entry::Missing => Ok(false),
            Entry::Symlink => {
                refused.push(finding::symlink_refused(relative));
                Ok(false)
            }
            Entry::File | Entry::Other => Err(FileError::new(
                &self.path(relative),
                format!("`{}` is not a folder", self.path(relative).display()),
            )),
        }
    }

    /// One file of the workspace: `None` when missing or refused.
    fn file(&self, relative: &str, refused: &mut Vec<Diagnostic>) -> Result<Option<Vec<u8>>> {
        let path = self.path(relative);
        match entry(&path)? {
            Entry::File => read_limited(&path).map(Some),
            Entry::Missing => Ok(None),
            Entry::Symlink => {
                refused.push(finding::symlink_refused(relative));
                Ok(None)
            }
            Entry::Directory | Entry::Other => {
                Err(FileError::new(&path, format!("`{}` is not a regular file", path.display())))
            }
        }
    }

    /// The `*.json` files of a folder. Symlinked entries of any name are refused.
    fn json_files(&self, relative: &str, refused: &mut Vec<Diagnostic>) -> Result<Vec<SourceFile>> {
        let folder = self.path(relative);
        let mut files = Vec::new();
        let listing = fs::read_dir(&folder).at(&folder, || format!("cannot list `{}`", folder.display()))?;
        let mut entries = Vec::new();
        for item in listing {
            let item = item.at(&folder, || format!("cannot list `{}`", folder.display()))?;
            entries.push(item.file_name().to_string_lossy().into_owned());
        }
        entries.sort();
        for name in entries {
            let relative_file = format!("{relative}/{name}");
            let path = folder.join(&name);
            match entry(&path)? {
                Entry::Symlink => refused.push(finding::symlink_refused(&relative_file)),
                Entry::File if name.ends_with(".json") => {
                    files.push(SourceFile::new(name, read_limited(&path)?));
                }
                _ => {}
            }
        }
        Ok(files)
    }

    /// Reads the People files and bindings every command needs.
    pub fn collect(&self) -> Result<WorkspaceFiles> {
        self.collect_files(Contract::Left)
    }

    /// Reads the People files and bindings with the schema mirrors and lock, which only
    /// `validate` looks at.
    pub fn collect_with_contract(&self) -> Result<WorkspaceFiles> {
        self.collect_files(Contract::Read)
    }

    fn collect_files(&self, contract: Contract) -> Result<WorkspaceFiles> {
        let with_contract = contract == Contract::Read;
        let mut files = WorkspaceFiles::default();
        let mut refused = Vec::new();
        if with_contract && self.folder("schemas", &mut refused)? {
            let lock = self.file(contract::LOCK_PATH, &mut refused)?;
            let mut listed = std::collections::BTreeMap::new();
            for relative in lock.as_deref().map(contract::listed_paths).unwrap_or_default() {
                let bytes = self.listed_file(&relative, &mut refused)?;
                listed.insert(relative, bytes);
            }
            files.contract = ContractFiles {
                person_schema: self.file(contract::PERSON_SCHEMA_PATH, &mut refused)?,
                bindings_schema: self.file(contract::BINDINGS_SCHEMA_PATH, &mut refused)?,
                lock,
                listed,
            };
        }
        if self.folder(PEOPLE_DIRECTORY, &mut refused)? {
            files.people = self.json_files(PEOPLE_DIRECTORY, &mut refused)?;
            files.bindings = self.file(acompose_people::workspace::BINDINGS_PATH, &mut refused)?;
        }
        if self.folder("templates", &mut refused)? && self.folder(TEMPLATES_DIRECTORY, &mut refused)? {
            files.templates = self.json_files(TEMPLATES_DIRECTORY, &mut refused)?;
        }
        // A symlinked `people/bindings.yaml` is met both while listing `people/` and
        // when the file itself is looked up; report it once.
        refused.sort_by(|left, right| left.file.cmp(&right.file));
        refused.dedup();
        files.refused = refused;
        Ok(files)
    }

    /// A file an Agent Toolkit lock lists (the engine has checked the path is relative
    /// and stays inside). Every folder on the way is refused when it is a symlink.
    fn listed_file(&self, relative: &str, refused: &mut Vec<Diagnostic>) -> Result<Option<Vec<u8>>> {
        let mut folder = String::new();
        for segment in relative.split('/').rev().skip(1).collect::<Vec<_>>().into_iter().rev() {
            if !folder.is_empty() {
                folder.push('/');
            }
            folder.push_str(segment);
            if !self.folder(&folder, refused)? {
                return Ok(None);
            }
        }
        self.file(relative, refused)
    }

    /// Reads the schema lock for `people init`: `Ok(None)` when it does not exist.
    pub fn existing_lock(&self) -> Result<Option<Vec<u8>>, Stop> {
        let mut refused = Vec::new();
        let present = self.folder("schemas", &mut refused)?;
        let bytes = if present { self.file(contract::LOCK_PATH, &mut refused)? } else { None };
        if !refused.is_empty() {
            return Err(Stop::Findings(refused));
        }
        Ok(bytes)
    }

    /// Reads one Person file: `Ok(None)` when it does not exist.
    pub fn person_file(&self, id: &str) -> Result<Option<Vec<u8>>, Stop> {
        let mut refused = Vec::new();
        let present = self.folder(PEOPLE_DIRECTORY, &mut refused)?;
        let bytes = if present { self.file(&format!("{PEOPLE_DIRECTORY}/{id}.json"), &mut refused)? } else { None };
        if !refused.is_empty() {
            return Err(Stop::Findings(refused));
        }
        Ok(bytes)
    }

    /// The `people/` folder, created when missing; refused when a symlink.
    pub fn people_folder(&self) -> Result<PathBuf, Stop> {
        self.storage_folder(PEOPLE_DIRECTORY)
    }

    /// A folder to write into, created when missing; refused when a symlink.
    pub fn storage_folder(&self, relative: &str) -> Result<PathBuf, Stop> {
        let mut refused = Vec::new();
        let path = self.path(relative);
        if !self.folder(relative, &mut refused)? {
            if !refused.is_empty() {
                return Err(Stop::Findings(refused));
            }
            fs::create_dir(&path).at(&path, || format!("cannot create `{}`", path.display()))?;
        }
        Ok(path)
    }

    /// The files of a workspace folder whose names end in one of `extensions`, each read
    /// with the per-file limit, sorted by name; symlinked files are refused (and come
    /// back as findings), a missing folder has none.
    pub fn folder_files(
        &self,
        relative: &str,
        extensions: &[&str],
    ) -> Result<(Vec<SourceFile>, Vec<Diagnostic>), Stop> {
        let mut refused = Vec::new();
        if !self.folder(relative, &mut refused)? {
            return if refused.is_empty() { Ok((Vec::new(), Vec::new())) } else { Err(Stop::Findings(refused)) };
        }
        let path = self.path(relative);
        let entries = fs::read_dir(&path).at(&path, || format!("cannot list `{}`", path.display()))?;
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
            .filter(|name| extensions.iter().any(|extension| name.ends_with(extension)))
            .collect();
        names.sort();
        let mut files = Vec::new();
        for name in names {
            if let Some(bytes) = self.file(&format!("{relative}/{name}"), &mut refused)? {
                files.push(SourceFile::new(name, bytes));
            }
        }
        Ok((files, refused))
    }

    /// Refuses (with findings) every path in `relatives` that is a symlink.
    pub fn refuse_symlinks(&self, relatives: &[&str]) -> Result<(), Stop> {
        let mut refused = Vec::new();
        for relative in relatives {
            if let Entry::Symlink = entry(&self.path(relative))? {
                refused.push(finding::symlink_refused(relative));
            }
        }
        if refused.is_empty() { Ok(()) } else { Err(Stop::Findings(refused)) }
    }
}

/// How the workspace is named in a finding: as given, made printable.
fn workspace_label(root: &Path) -> String {
    root.to_string_lossy().replace('\\', "/")
}

/// Reads a file the caller found to be a regular file, at most `MAX_FILE_BYTES + 1`
/// bytes (enough for the engine to see it is too large).
pub fn read_limited(path: &Path) -> Result<Vec<u8>> {
    read_regular(path, MAX_FILE_BYTES)
}

/// Reads the regular file at `path`, at most `max_bytes` + 1 bytes (People files and
/// session records). The file is opened without following a symlink and must still be a
/// regular file once open, so a swap for a symlink or a special file since the caller
/// inspected it is refused; a file replaced by another regular file meanwhile (every
/// write here renames a complete file into place) is read as it is now.
pub(crate) fn read_regular(path: &Path, max_bytes: usize) -> Result<Vec<u8>> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(descriptor) => File::from(descriptor),
        Err(rustix::io::Errno::LOOP) => return Err(changed(path)),
        Err(error) => {
            return Err(FileError::caused(path, format!("cannot open `{}`", path.display()), error.into()));
        }
    };
    let opened = file.metadata().at(path, || format!("cannot inspect `{}`", path.display()))?;
    if !opened.is_file() {
        return Err(changed(path));
    }
    let mut bytes = Vec::new();
    let limit = u64::try_from(max_bytes.saturating_add(1)).unwrap_or(u64::MAX);
    file.take(limit).read_to_end(&mut bytes).at(path, || format!("cannot read `{}`", path.display()))?;
    Ok(bytes)
}

fn changed(path: &Path) -> FileError {
    FileError::new(path, format!("`{}` changed while it was being read", path.display()))
}

/// Reads a file named on the command line (a hire file, a recipe), refusing a symlink.
pub fn read_input_file(path: &Path) -> Result<Vec<u8>, Stop> {
    match entry(path)? {
        Entry::File => Ok(read_limited(path)?),
        Entry::Symlink => Err(Stop::Findings(vec![finding::symlink_refused(&input_label(path))])),
        Entry::Missing => Err(Stop::Io(FileError::new(path, format!("`{}` does not exist", path.display())))),
        Entry::Directory | Entry::Other => {
            Err(Stop::Io(FileError::new(path, format!("`{}` is not a regular file", path.display()))))
        }
    }
}

/// How a file named on the command line appears in reports: its file name only, so no
/// absolute path reaches the output.
pub fn input_label(path: &Path) -> String {
    path.file_name().map_or_else(|| path.to_string_lossy().into_owned(), |name| name.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_replaced_by_a_rename_is_read_as_it_is_now_and_a_swap_for_a_link_is_refused() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let path = dir.path().join("ada.json");
        fs::write(&path, b"first").expect("write");
        // A writer renames a complete file over the one a reader inspected.
        fs::write(dir.path().join(".next"), b"second").expect("write");
        fs::rename(dir.path().join(".next"), &path).expect("rename");
        assert_eq!(read_regular(&path, 64).expect("read"), b"second");
        // Anything but a regular file in its place is refused, unread.
        fs::remove_file(&path).expect("remove");
        std::os::unix::fs::symlink(dir.path().join(".elsewhere"), &path).expect("link");
        fs::write(dir.path().join(".elsewhere"), b"secret").expect("write");
        let refused = read_regular(&path, 64).expect_err("a link is refused");
        assert!(refused.to_string().contains("changed while it was being read"), "{refused}");
        fs::remove_file(&path).expect("remove");
        fs::create_dir(&path).expect("folder");
        assert!(read_regular(&path, 64).is_err(), "a folder is refused");
    }

    #[test]
    fn a_file_is_read_to_one_byte_past_its_limit() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let path = dir.path().join("big.json");
        fs::write(&path, vec![b'x'; 100]).expect("write");
        assert_eq!(read_regular(&path, 10).expect("read").len(), 11);
    }
}
