//! A projection's paths in the `.git/info/exclude` of the repository its target is in:
//! found by walking up to the work tree's `.git` (a folder, or a worktree's `gitdir:`
//! file), read bounded, edited with the engine's block functions and written atomically.
//! The exclude file is the repository's own: only the projection's block ever changes.

use std::path::{Path, PathBuf};

use acompose_engine::git_exclude;

/// The largest exclude file read; a larger one is left alone and reported.
const EXCLUDE_LIMIT: u64 = 1 << 20;

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
    /// which a team may commit).
    Cleared(PathBuf),
    /// The exclude file could not be read or written; the projection itself stands.
    Failed(String),
}

/// Lists `paths` (relative to `target`) in the exclude file of the repository holding
/// `target`, replacing the block an earlier projection into the same target left; with
/// `None`, removes that block.
pub fn update(target: &Path, paths: Option<&[String]>) -> Excluded {
    let Some((root, exclude)) = repository_of(target) else {
        return Excluded::NotInRepository;
    };
    let target = target.canonicalize().unwrap_or_else(|_| target.to_path_buf());
    let Some(relative) = target.strip_prefix(&root).ok().and_then(|relative| relative.to_str()) else {
        return Excluded::Failed(format!("`{}` cannot be named in `{}`", target.display(), exclude.display()));
    };
    let relative = relative.replace(std::path::MAIN_SEPARATOR, "/");
    let existing = match read_exclude(&exclude) {
        Ok(existing) => existing,
        Err(reason) => return Excluded::Failed(reason),
    };
    let block = match paths {
        Some(paths) => match git_exclude::block(&relative, paths) {
            Some(block) => Some(block),
            None => return Excluded::Failed("a projected path holds a line break".to_owned()),
        },
        None => None,
    };
    let Some(edited) = git_exclude::with_block(&existing, &relative, block.as_deref()) else {
        return Excluded::Failed("the target's path holds a line break".to_owned());
    };
    if edited == existing {
        return Excluded::Unchanged;
    }
    if let Err(error) = write_exclude(&exclude, &edited) {
        return Excluded::Failed(error);
    }
    if paths.is_some() { Excluded::Listed(exclude) } else { Excluded::Cleared(exclude) }
}

/// The work tree's root and its exclude file, for the nearest `.git` at or above
/// `target`. A worktree's `.git` file points at its git folder, whose `commondir` holds
/// the exclude file all worktrees share.
fn repository_of(target: &Path) -> Option<(PathBuf, PathBuf)> {
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
        let common = match std::fs::read_to_string(git_folder.join("commondir")) {
            Ok(common) => git_folder.join(common.trim()),
            Err(_) => git_folder,
        };
        Some((folder.to_path_buf(), common.join("info").join("exclude")))
    })
}

/// The exclude file's text, empty when there is none yet.
fn read_exclude(exclude: &Path) -> Result<String, String> {
    match std::fs::symlink_metadata(exclude) {
        Ok(metadata) if !metadata.is_file() => Err(format!("`{}` is not a file", exclude.display())),
        Ok(metadata) if metadata.len() > EXCLUDE_LIMIT => {
            Err(format!("`{}` is larger than 1 MiB; it was left alone", exclude.display()))
        }
        Ok(_) => std::fs::read_to_string(exclude)
            .map_err(|error| format!("cannot read `{}`: {}", exclude.display(), crate::load::error_kind(&error))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(error) => Err(format!("cannot read `{}`: {}", exclude.display(), crate::load::error_kind(&error))),
    }
}

/// Replaces the exclude file atomically, making `info/` when the repository has none.
fn write_exclude(exclude: &Path, text: &str) -> Result<(), String> {
    let folder = exclude.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder)
        .map_err(|error| format!("cannot create `{}`: {}", folder.display(), crate::load::error_kind(&error)))?;
    crate::atomic::replace(folder, "exclude", text.as_bytes()).map_err(|error| error.to_string())
}

/// Whether git tracks `path` (relative to `target`) as an ordinary entry of its index:
/// neither untracked nor already marked `skip-worktree` or `assume-unchanged` by someone
/// else. `false` outside a work tree and when git cannot be run.
pub fn tracked_plainly(target: &Path, path: &str) -> bool {
    if repository_of(target).is_none() {
        return false;
    }
    git(target, &["ls-files", "-v", "--", path]).is_ok_and(|listed| listed.starts_with("H "))
}

/// Marks (`hide`) or unmarks `paths` (relative to `target`) `skip-worktree` in the index
/// of the repository holding `target`: a tracked instructions file holding a managed
/// block then does not show in `git status`, and shows again when the block is gone.
pub fn skip_worktree(target: &Path, paths: &[String], hide: bool) -> Result<(), String> {
    if paths.is_empty() || repository_of(target).is_none() {
        return Ok(());
    }
    let flag = if hide { "--skip-worktree" } else { "--no-skip-worktree" };
    let mut arguments = vec!["update-index", flag, "--"];
    arguments.extend(paths.iter().map(String::as_str));
    git(target, &arguments).map(drop)
}

/// Runs git in `target` against the repository holding it (never one named by the
/// caller's `GIT_*` variables), returning its standard output.
fn git(target: &Path, arguments: &[&str]) -> Result<String, String> {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(target)
        .args(arguments)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|error| format!("cannot run git: {}", crate::load::error_kind(&error)))?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        let first = said.lines().next().unwrap_or("").chars().take(200).collect::<String>();
        return Err(format!("`git {}` failed: {first}", arguments.first().copied().unwrap_or("")));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
