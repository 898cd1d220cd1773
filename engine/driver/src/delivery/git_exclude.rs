//! The git repository a projection's target is in, and its own files a projection keeps
//! a block in: found by walking up to the work tree's `.git` (a folder, or a worktree's
//! or submodule's `gitdir:` file), `info/exclude` and `info/attributes` read bounded,
//! edited with the engine's block functions and written atomically, under a lock of the
//! `info` folder itself (it is shared by every worktree, and more than one projection may
//! edit it). Also runs `git` itself for what only git may change (its config and index).
//! The repository's files are its own: only a projection's blocks ever change.

use std::path::{Path, PathBuf};

use acompose_engine::git_exclude;

use crate::compose::load::error_kind;

/// The largest `info/` file read; a larger one is left alone and reported.
const INFO_LIMIT: u64 = 1 << 20;

/// What happened to the repository's exclude file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Excluded {
    /// The target is in no git work tree.
    NotInRepository,
    /// The exclude file already said exactly this.
    Unchanged,
    /// The projection's paths were written into this exclude file.
    Listed(PathBuf),
    /// The projection's block was removed from this exclude file (a copied projection,
    /// which a team may commit, or one taken out).
    Cleared(PathBuf),
    /// The exclude file could not be read or written; the projection itself stands.
    Failed(String),
}

/// A git repository as a projection meets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
    /// The root of the work tree (the folder holding `.git`).
    pub top: PathBuf,
    /// The folder every worktree shares: its `config` and `info/`.
    pub common: PathBuf,
    /// The name of a linked worktree (`<common>/worktrees/<name>`); `None` for the main
    /// one.
    pub worktree: Option<String>,
}

/// One of the repository's files a projection keeps a block in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InfoFile {
    Exclude,
    Attributes,
}

impl InfoFile {
    pub fn name(self) -> &'static str {
        match self {
            InfoFile::Exclude => "exclude",
            InfoFile::Attributes => "attributes",
        }
    }
}

impl Repository {
    /// The repository whose work tree holds `target` (the nearest `.git` at or above it).
    pub fn of(target: &Path) -> Option<Repository> {
        let start = target.canonicalize().ok()?;
        start.ancestors().find_map(|folder| {
            let dot_git = folder.join(".git");
            let metadata = std::fs::symlink_metadata(&dot_git).ok()?;
            let git_folder = if metadata.is_dir() {
                dot_git
            } else if metadata.is_file() {
                let text = std::fs::read_to_string(&dot_git).ok()?;
                folder.join(text.strip_prefix("gitdir:")?.trim())
            } else {
                return None;
            };
            let (common, worktree) = match std::fs::read_to_string(git_folder.join("commondir")) {
                Ok(common) => {
                    let name = git_folder.file_name().map(|name| name.to_string_lossy().into_owned());
                    (git_folder.join(common.trim()), name)
                }
                Err(_) => (git_folder, None),
            };
            let common = common.canonicalize().unwrap_or(common);
            Some(Repository { top: folder.to_path_buf(), common, worktree })
        })
    }

    /// `path` relative to the work tree's root, `/`-separated (`""` for the root).
    pub fn relative(&self, path: &Path) -> Option<String> {
        let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let relative = path.strip_prefix(&self.top).ok()?.to_str()?;
        Some(relative.replace(std::path::MAIN_SEPARATOR, "/"))
    }

    /// The name the blocks of a projection into `target` carry.
    pub fn block_name(&self, target: &Path) -> Option<String> {
        git_exclude::block_name(&self.relative(target)?, self.worktree.as_deref())
    }

    pub fn info_folder(&self) -> PathBuf {
        self.common.join("info")
    }

    pub fn info(&self, file: InfoFile) -> PathBuf {
        self.info_folder().join(file.name())
    }

    /// The repository's own config file (local to this clone, shared by its worktrees).
    pub fn config(&self) -> PathBuf {
        self.common.join("config")
    }

    /// Runs git in the work tree (never against a repository named by the caller's
    /// `GIT_*` variables), returning its standard output.
    pub fn git(&self, arguments: &[&str]) -> Result<Vec<u8>, String> {
        git(&self.top, arguments)
    }
}

/// The repository holding `target`: its work tree's root and its exclude file.
pub fn repository_of(target: &Path) -> Option<Repository> {
    Repository::of(target)
}

/// Takes the lock of the repository's `info` folder itself (made when missing), so
/// that no file is left in it.
pub fn lock_info(repository: &Repository) -> Result<crate::home::transaction::Lock, String> {
    let folder = repository.info_folder();
    std::fs::create_dir_all(&folder)
        .map_err(|error| format!("cannot create `{}`: {}", folder.display(), error_kind(&error)))?;
    crate::home::transaction::lock_directory_itself(&folder, crate::home::LOCK_TIMEOUT)
        .map_err(|error| error.to_string())
}

/// An `info/` file's text, empty when there is none yet.
pub fn read_info(path: &Path) -> Result<String, String> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if !metadata.is_file() => Err(format!("`{}` is not a file", path.display())),
        Ok(metadata) if metadata.len() > INFO_LIMIT => {
            Err(format!("`{}` is larger than 1 MiB; it was left alone", path.display()))
        }
        Ok(_) => std::fs::read_to_string(path)
            .map_err(|error| format!("cannot read `{}`: {}", path.display(), error_kind(&error))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(error) => Err(format!("cannot read `{}`: {}", path.display(), error_kind(&error))),
    }
}

/// Replaces an `info/` file atomically; an attributes file left empty goes (git reads no
/// file and an empty one alike, and the repository had none before a projection).
pub fn write_info(path: &Path, text: &str) -> Result<(), String> {
    let folder = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
    if text.is_empty() && name == InfoFile::Attributes.name() {
        return match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(format!("cannot remove `{}`: {}", path.display(), error_kind(&error))),
        };
    }
    crate::home::atomic::replace(folder, name, text.as_bytes()).map_err(|error| error.to_string())
}

/// Puts `lines` as the block named `name` into the `file` of `repository` (`None`
/// takes the block out). The caller holds [`lock_info`].
pub fn update_block(
    repository: &Repository,
    file: InfoFile,
    name: &str,
    lines: Option<&[String]>,
) -> Result<Option<PathBuf>, String> {
    let path = repository.info(file);
    let existing = read_info(&path)?;
    let block = lines.map(|lines| git_exclude::block(name, lines));
    let edited = git_exclude::with_block(&existing, name, block.as_deref());
    if edited == existing {
        return Ok(None);
    }
    write_info(&path, &edited)?;
    Ok(Some(path))
}

/// Why git gave no output.
#[derive(Debug)]
pub enum GitError {
    /// git could not be started.
    Spawn(std::io::Error),
    /// git ran and failed; the first line it said, at most 200 characters.
    Failed(String),
}

/// Runs git in `folder` against the repository holding it — never one named by the
/// caller's `GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE` or `GIT_COMMON_DIR` — with no
/// input, and returns its standard output. The one way the driver runs git.
pub fn run_git<A: AsRef<std::ffi::OsStr>>(folder: &Path, arguments: &[A]) -> Result<Vec<u8>, GitError> {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(folder)
        .args(arguments)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_COMMON_DIR")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(GitError::Spawn)?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        return Err(GitError::Failed(said.lines().next().unwrap_or("").chars().take(200).collect()));
    }
    Ok(output.stdout)
}

/// [`run_git`] with its failure as a sentence.
pub fn git(folder: &Path, arguments: &[&str]) -> Result<Vec<u8>, String> {
    run_git(folder, arguments).map_err(|error| match error {
        GitError::Spawn(error) => format!("cannot run git: {}", error_kind(&error)),
        GitError::Failed(first) => format!("`git {}` failed: {first}", arguments.first().copied().unwrap_or("")),
    })
}
