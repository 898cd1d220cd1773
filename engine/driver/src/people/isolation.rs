//! Isolation of People sessions on disk: the session's own `git worktree` of the project
//! (`worktree` and `session` isolation), the bubblewrap sandbox around the runner
//! (`session`), and `people clean`, which removes the worktrees of ended sessions.
//!
//! Worktrees live in `<workspace>/.agent-toolkit/worktrees/<session id>` on the branch
//! `people/<person>/<session id>`, made from the project's `HEAD` before the runner
//! starts and kept after it ends, so the work stays until the user removes it. Each
//! session gets its own, so two Persons (or two sessions of one) never share a working
//! tree. The sandbox does not decide what is safe: it mounts the whole file system
//! read-only and makes writable exactly the folders this module names.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use acompose_people::session::{self, SESSIONS_DIRECTORY, SessionRecord};
use acompose_people::{Isolation, printable};

use super::sessions::{Clock, lock, reconcile_locked, sessions_folder};
use super::storage::{Stop, Workspace};
use crate::delivery::git_exclude::GitError;
use crate::home::atomic::FileError;

/// Where the worktrees of sessions live, relative to the workspace.
pub const WORKTREES_DIRECTORY: &str = ".agent-toolkit/worktrees";
/// Where the private temporary folders of sandboxed sessions live.
pub const SCRATCH_DIRECTORY: &str = ".agent-toolkit/scratch";
/// The sandbox's binary, looked up on `PATH`.
pub const SANDBOX_BINARY: &str = "bwrap";

/// Runs git in `folder` against the repository holding it (never one named by the
/// caller's `GIT_*` variables), returning its standard output.
fn git(folder: &Path, arguments: &[&std::ffi::OsStr]) -> Result<String, Stop> {
    match crate::delivery::git_exclude::run_git(folder, arguments) {
        Ok(output) => Ok(String::from_utf8_lossy(&output).trim_end().to_owned()),
        Err(GitError::Spawn(error)) => Err(Stop::Io(FileError::caused(folder, "cannot run git".to_owned(), error))),
        Err(GitError::Failed(first)) => {
            let command = arguments.iter().take(2).map(|argument| argument.to_string_lossy()).collect::<Vec<_>>();
            Err(Stop::Invalid(format!(
                "`git {}` failed in `{}`: {}",
                command.join(" "),
                printable(&folder.display().to_string()),
                printable(&first)
            )))
        }
    }
}

fn os(text: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(text)
}

/// Checks, at the review, that the project can be given a worktree: its folder is the
/// top of a git repository whose `HEAD` names a commit.
pub(crate) fn check_project(project_id: &str, project: &Path) -> Result<(), Stop> {
    let not_a_repository = || {
        Stop::Invalid(format!(
            "worktree isolation needs project `{project_id}` to be the top folder of a git repository with a commit"
        ))
    };
    let top = git(project, &[os("rev-parse"), os("--show-toplevel")]).map_err(|_| not_a_repository())?;
    let top = fs::canonicalize(&top).map_err(|_| not_a_repository())?;
    if top != project {
        return Err(not_a_repository());
    }
    git(project, &[os("rev-parse"), os("--verify"), os("--quiet"), os("HEAD^{commit}")])
        .map_err(|_| not_a_repository())?;
    Ok(())
}

/// The worktree of session `id`, in the workspace's worktrees folder (made when
/// missing, canonical, never a symlink).
pub(crate) fn worktree_folder(workspace: &Workspace, id: &str) -> Result<PathBuf, Stop> {
    let folder = canonical_storage(workspace, WORKTREES_DIRECTORY)?;
    Ok(folder.join(id))
}

fn canonical_storage(workspace: &Workspace, relative: &str) -> Result<PathBuf, Stop> {
    workspace.refuse_symlinks(&[".agent-toolkit", relative])?;
    let folder = workspace.storage_folder(relative)?;
    fs::canonicalize(&folder)
        .map_err(|error| Stop::Io(FileError::caused(&folder, format!("cannot resolve `{}`", folder.display()), error)))
}

/// Adds the session's worktree: `git worktree add -b <branch> <folder> HEAD` in the
/// project.
pub(crate) fn make_worktree(project: &Path, folder: &Path, branch: &str) -> Result<(), Stop> {
    git(project, &[os("worktree"), os("add"), os("--quiet"), os("-b"), os(branch), folder.as_os_str(), os("HEAD")])
        .map(drop)
}

/// What a sandboxed runner may write besides its worktree.
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    /// The `bwrap` binary found on `PATH`.
    pub program: PathBuf,
    /// Every folder the runner may write, in mount order.
    pub writable: Vec<PathBuf>,
    /// Its private temporary folder, given as `TMPDIR`.
    pub scratch: PathBuf,
}

/// Prepares the sandbox of session `id` working in `worktree`: its private temporary
/// folder, the worktree's own git folder (so `git status` and `git add` work) and the
/// runtime home when the session runs as a role.
pub(crate) fn prepare_sandbox(
    workspace: &Workspace,
    program: &Path,
    id: &str,
    worktree: &Path,
    runtime_home: Option<&Path>,
) -> Result<Sandbox, Stop> {
    let scratch = canonical_storage(workspace, SCRATCH_DIRECTORY)?.join(id);
    fs::create_dir(&scratch).map_err(|error| {
        Stop::Io(FileError::caused(&scratch, format!("cannot create `{}`", scratch.display()), error))
    })?;
    let admin = PathBuf::from(git(worktree, &[os("rev-parse"), os("--absolute-git-dir")])?);
    let mut writable = vec![worktree.to_path_buf(), admin, scratch.clone()];
    writable.extend(runtime_home.map(Path::to_path_buf));
    Ok(Sandbox { program: program.to_path_buf(), writable, scratch })
}

impl Sandbox {
    /// The argv that runs `argv` in the sandbox, starting in `cwd`: the whole file system
    /// read-only, `/dev` as it is (the terminal lives there), the writable folders bound
    /// read-write over it.
    pub(crate) fn wrap(&self, argv: Vec<OsString>, cwd: &Path) -> Vec<OsString> {
        let mut wrapped: Vec<OsString> = vec![self.program.clone().into_os_string()];
        let mut push = |parts: &[&std::ffi::OsStr]| wrapped.extend(parts.iter().map(|part| part.to_os_string()));
        push(&[os("--ro-bind"), os("/"), os("/"), os("--dev-bind"), os("/dev"), os("/dev")]);
        for folder in &self.writable {
            push(&[os("--bind"), folder.as_os_str(), folder.as_os_str()]);
        }
        push(&[os("--chdir"), cwd.as_os_str(), os("--")]);
        wrapped.extend(argv);
        wrapped
    }
}

/// What `people clean` did.
#[derive(Debug, Clone, Default)]
pub struct Cleaned {
    /// The sessions whose worktree was removed (their branch is kept).
    pub removed: Vec<SessionRecord>,
    /// Sessions whose worktree git refused to remove, with what it said.
    pub refused: Vec<(SessionRecord, String)>,
}

/// Removes the worktrees (and sandbox temporary folders) of ended sessions: all of them,
/// or only `session`'s. Git refuses a worktree with uncommitted changes unless `force`;
/// branches are kept, so committed work stays. A running session's worktree is never
/// touched.
pub fn clean_worktrees(
    workspace: &Workspace,
    session: Option<&str>,
    force: bool,
    clock: &dyn Clock,
) -> Result<Cleaned, Stop> {
    if let Some(id) = session.filter(|id| !session::is_session_id(id)) {
        return Err(Stop::Invalid(format!("`{}` is not a session id", printable(id))));
    }
    let Some(folder) = sessions_folder(workspace)? else {
        return Ok(Cleaned::default());
    };
    let guard = lock(&folder)?;
    let listing = reconcile_locked(&folder, clock)?;
    drop(guard);
    let chosen: Vec<SessionRecord> =
        listing.records.into_iter().filter(|record| session.is_none_or(|id| record.id == id)).collect();
    if let Some(id) = session {
        match chosen.first() {
            None => return Err(Stop::Invalid(format!("there is no session `{id}` in `{SESSIONS_DIRECTORY}/`"))),
            Some(record) if !record.status.is_terminal() => {
                return Err(Stop::Invalid(format!("session {id} is still {}; stop it first", record.status.as_str())));
            }
            Some(_) => {}
        }
    }
    let mut cleaned = Cleaned::default();
    for record in chosen.into_iter().filter(|record| record.status.is_terminal()) {
        let Some(worktree) = record.links.worktree.clone().map(PathBuf::from) else { continue };
        let _ = fs::remove_dir_all(workspace.path(SCRATCH_DIRECTORY).join(&record.id));
        if !worktree.exists() {
            continue;
        }
        match remove_worktree(&worktree, force) {
            Ok(()) => cleaned.removed.push(record),
            Err(Stop::Invalid(message)) => cleaned.refused.push((record, message)),
            Err(Stop::Io(error)) => cleaned.refused.push((record, error.to_string())),
            Err(other) => return Err(other),
        }
    }
    Ok(cleaned)
}

/// `git worktree remove [--force] <worktree>`, run from the worktree's repository.
fn remove_worktree(worktree: &Path, force: bool) -> Result<(), Stop> {
    let common = git(worktree, &[os("rev-parse"), os("--path-format=absolute"), os("--git-common-dir")])?;
    let mut arguments = vec![os("worktree"), os("remove")];
    if force {
        arguments.push(os("--force"));
    }
    arguments.push(worktree.as_os_str());
    let repository = Path::new(&common);
    git(repository.parent().unwrap_or(repository), &arguments).map(drop)
}

/// Whether `isolation` gives the session a worktree.
pub(crate) fn has_worktree(isolation: Isolation) -> bool {
    !matches!(isolation, Isolation::Inherited)
}
