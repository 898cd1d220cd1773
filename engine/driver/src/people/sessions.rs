//! People sessions on disk: the records folder `<workspace>/.agent-toolkit/sessions/`, its
//! lock, listing with reconciliation, runner discovery on `PATH`, the start review and
//! `stop`. The engine decides (`people::session`, `people::start`); this module reads the
//! clock (through [`Clock`]), the process table and the files, and writes the records.
//! Starting the runner itself is `session_runner`.
//!
//! Every write happens under the folder's lock (`.acompose.lock`): a launcher holds it
//! from writing `launching` until writing `running`, so a `launching` record found under
//! the lock was left by a launcher that died.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use acompose_people::runner::{RUNNERS, Runner, runner};
use acompose_people::session::{
    self, Ending, Interruption, MAX_RECORD_BYTES, MAX_RECORDS, SESSIONS_DIRECTORY, SessionRecord, Status, Timestamp,
    check_record, checked_record_bytes, processes_to_observe, reconcile,
};
use acompose_people::start::{StartRejection, StartRequest, StartReview, review_start};
use acompose_people::{Diagnostic, Roster, SourceFile, finding, is_slug, printable};

use super::as_role::{RosterPlace, bound_role, prepare_role};
use super::storage::{Stop, Workspace};
use super::{checked_id, existing_person, process};
use crate::home::atomic::{At as _, FileError};
use crate::home::transaction;
use acompose_people::roster_role::Bound;
use acompose_people::session::SessionLinks;
use std::ffi::OsString;

/// How long a command waits for another writer of the sessions folder.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(10);
/// The default time between SIGTERM and SIGKILL when a session is ended.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);
/// The folder of the Agent Toolkit inside a workspace.
const TOOLKIT_DIRECTORY: &str = ".agent-toolkit";
/// The folder of project links inside a workspace.
pub const PROJECTS_DIRECTORY: &str = "projects";

/// Where the time of a record comes from. The driver reads the system clock; tests pass
/// a fixed one.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// The system clock, in whole UTC seconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let seconds = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |since| since.as_secs());
        Timestamp::from_unix_seconds(seconds)
    }
}

/// A clock that always reads the same time.
#[derive(Debug, Clone)]
pub struct FixedClock(pub Timestamp);

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        self.0.clone()
    }
}

// ---------------------------------------------------------------------------------------
// The records folder

/// The sessions folder of a workspace, made when missing, checked: neither
/// `.agent-toolkit` nor `sessions` may be a symlink.
pub fn made_sessions_folder(workspace: &Workspace) -> Result<PathBuf, Stop> {
    workspace.refuse_symlinks(&[TOOLKIT_DIRECTORY, SESSIONS_DIRECTORY])?;
    workspace.storage_folder(TOOLKIT_DIRECTORY)?;
    workspace.storage_folder(SESSIONS_DIRECTORY)
}

/// The sessions folder of a workspace if it exists, checked: neither `.agent-toolkit`
/// nor `sessions` may be a symlink.
pub fn sessions_folder(workspace: &Workspace) -> Result<Option<PathBuf>, Stop> {
    workspace.refuse_symlinks(&[TOOLKIT_DIRECTORY, SESSIONS_DIRECTORY])?;
    let path = workspace.path(SESSIONS_DIRECTORY);
    match fs::symlink_metadata(&path) {
        Ok(metadata) if metadata.is_dir() => Ok(Some(path)),
        Ok(_) => Err(Stop::Io(FileError::new(&path, format!("`{}` is not a folder", path.display())))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(Stop::Io(FileError::caused(&path, format!("cannot inspect `{}`", path.display()), error))),
    }
}

/// Takes the lock of the sessions folder.
pub fn lock(folder: &Path) -> Result<transaction::Lock, Stop> {
    transaction::lock(folder, LOCK_TIMEOUT).map_err(|error| match error {
        transaction::TransactionError::LockTimeout { path, .. } => Stop::Io(FileError::new(
            &path,
            format!("another command is writing session records (`{}` stayed locked)", path.display()),
        )),
        other => Stop::Io(FileError::new(folder, other.to_string())),
    })
}

/// Reads the files of the sessions folder for the engine. Dot files are the lock and
/// temporaries; symlinks and folders are refused; at most `MAX_RECORDS + 1` other names
/// are taken, and above `MAX_RECORDS` none is read (the engine refuses the folder).
fn read_folder(folder: &Path) -> Result<(Vec<SourceFile>, Vec<Diagnostic>), Stop> {
    let listing = fs::read_dir(folder).at(folder, || format!("cannot list `{}`", folder.display()))?;
    let mut names = Vec::new();
    for item in listing {
        let item = item.at(folder, || format!("cannot list `{}`", folder.display()))?;
        let name = item.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') {
            names.push(name);
        }
        if names.len() > MAX_RECORDS {
            let files = names.into_iter().map(|name| SourceFile::new(name, Vec::new())).collect();
            return Ok((files, Vec::new()));
        }
    }
    names.sort();
    let mut files = Vec::new();
    let mut refused = Vec::new();
    for name in names {
        let relative = format!("{SESSIONS_DIRECTORY}/{}", printable(&name));
        let path = folder.join(&name);
        let metadata = fs::symlink_metadata(&path).at(&path, || format!("cannot inspect `{}`", path.display()))?;
        if metadata.file_type().is_symlink() {
            refused.push(finding::symlink_refused(&relative));
        } else if !metadata.is_file() {
            refused.push(finding::error("not-a-record", &relative, "only session record files belong here"));
        } else {
            files.push(SourceFile::new(name, read_record_file(&path)?));
        }
    }
    Ok((files, refused))
}

/// Reads at most `MAX_RECORD_BYTES + 1` bytes of a file found to be a regular file,
/// refusing a swap for anything else between the inspection and the open.
fn read_record_file(path: &Path) -> Result<Vec<u8>, Stop> {
    super::storage::read_regular(path, MAX_RECORD_BYTES).map_err(Stop::Io)
}

/// Writes `record` into `folder` as a new file: false if the name is taken. Only bytes a
/// later listing accepts are written.
pub(crate) fn create_record(folder: &Path, record: &SessionRecord) -> Result<bool, Stop> {
    let (name, bytes) = record_file(folder, record)?;
    Ok(crate::home::atomic::create_new(folder, &name, &bytes)?)
}

/// Writes `record` over its existing file in `folder`. Only bytes a later listing
/// accepts are written.
pub(crate) fn replace_record(folder: &Path, record: &SessionRecord) -> Result<(), Stop> {
    let (name, bytes) = record_file(folder, record)?;
    crate::home::atomic::replace(folder, &name, &bytes)?;
    Ok(())
}

/// A record's file name and checked bytes; refuses a symlink in its place.
fn record_file(folder: &Path, record: &SessionRecord) -> Result<(String, Vec<u8>), Stop> {
    let bytes = checked_record_bytes(record).map_err(Stop::Findings)?;
    let name = record.file_name();
    if fs::symlink_metadata(folder.join(&name)).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
        return Err(Stop::Findings(vec![finding::symlink_refused(&format!("{SESSIONS_DIRECTORY}/{name}"))]));
    }
    Ok((name, bytes))
}

/// Reads one record of the folder by id, `None` when there is no such file.
pub(crate) fn read_record(folder: &Path, id: &str) -> Result<Option<SessionRecord>, Stop> {
    let name = format!("{id}.json");
    let path = folder.join(&name);
    let metadata = match fs::symlink_metadata(&path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(Stop::Io(FileError::caused(&path, format!("cannot inspect `{}`", path.display()), error)));
        }
    };
    if metadata.file_type().is_symlink() {
        return Err(Stop::Findings(vec![finding::symlink_refused(&format!("{SESSIONS_DIRECTORY}/{name}"))]));
    }
    let bytes = read_record_file(&path)?;
    check_record(&name, &bytes).map(Some).map_err(Stop::Findings)
}

// ---------------------------------------------------------------------------------------
// Listing and reconciliation

/// The records of a workspace, newest first, after reconciliation.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Valid records, newest first, as they are on disk now (interruptions applied).
    pub records: Vec<SessionRecord>,
    /// What was wrong with the files that were not read as records; they are left as
    /// they are.
    pub findings: Vec<Diagnostic>,
    /// The records this listing changed to `interrupted`.
    pub interruptions: Vec<Interruption>,
}

/// Lists the sessions of a workspace and reconciles them: active records whose process
/// is gone (or whose pid now names a process with another start time) become
/// `interrupted` on disk. A workspace without a sessions folder has no sessions.
pub fn list_sessions(workspace: &Workspace, clock: &dyn Clock) -> Result<Listing, Stop> {
    let Some(folder) = sessions_folder(workspace)? else {
        return Ok(Listing::default());
    };
    let _lock = lock(&folder)?;
    reconcile_locked(&folder, clock)
}

/// Reads, reconciles and writes back, with the folder's lock held by the caller.
pub(crate) fn reconcile_locked(folder: &Path, clock: &dyn Clock) -> Result<Listing, Stop> {
    let (files, refused) = read_folder(folder)?;
    let listing = session::read_records(&files, refused);
    let mut observations = std::collections::BTreeMap::new();
    let mut hosted: Option<Option<std::collections::BTreeSet<String>>> = None;
    for (id, pid) in processes_to_observe(&listing.records) {
        let mut observation = process::observe(pid).map_err(|error| {
            Stop::Io(FileError::caused(Path::new("/proc"), format!("cannot look up process {pid}"), error))
        })?;
        let record = listing.records.iter().find(|record| record.id == id);
        if record.is_some_and(|record| record.links.host.is_some()) {
            let names = hosted.get_or_insert_with(|| {
                super::tmux::workspace_host(folder)
                    .and_then(|(tmux, socket)| super::tmux::hosted_sessions(&tmux, &socket))
            });
            if names.as_ref().is_some_and(|names| !names.contains(id)) {
                // Its host is gone: nobody can attach to it or enforce its limits.
                let _ = process::signal_group(pid, rustix::process::Signal::HUP);
                observation = session::Observation::Gone;
            }
        }
        observations.insert(id.to_owned(), observation);
    }
    let interruptions = reconcile(&listing.records, &observations, &clock.now());
    for interruption in &interruptions {
        replace_record(folder, &interruption.record)?;
    }
    let records = listing
        .records
        .into_iter()
        .map(|record| {
            interruptions
                .iter()
                .find(|interruption| interruption.record.id == record.id)
                .map_or(record, |interruption| interruption.record.clone())
        })
        .collect();
    Ok(Listing { records, findings: listing.findings, interruptions })
}

// ---------------------------------------------------------------------------------------
// Runners on PATH

/// One row of the runner table and where its binary was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundRunner {
    pub runner: &'static Runner,
    /// The first executable file named like the runner's binary on `PATH`, if any.
    pub path: Option<PathBuf>,
}

/// Every row of the runner table with its binary looked up on `path_variable` (the
/// value of `PATH`, passed in by the caller).
pub fn discover_runners(path_variable: Option<&OsStr>) -> Vec<FoundRunner> {
    RUNNERS.iter().map(|runner| FoundRunner { runner, path: find_binary(runner.binary, path_variable) }).collect()
}

/// The first executable regular file called `binary` in the folders of `path_variable`.
/// Empty and relative entries are skipped: a runner is never taken from the current
/// folder by accident.
pub fn find_binary(binary: &str, path_variable: Option<&OsStr>) -> Option<PathBuf> {
    let path_variable = path_variable?;
    std::env::split_paths(path_variable)
        .filter(|folder| folder.is_absolute())
        .map(|folder| folder.join(binary))
        .find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    fs::metadata(path).is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|metadata| metadata.is_file())
}

// ---------------------------------------------------------------------------------------
// The start review

/// What a user asks to start (the cli's flags, or a request to the server).
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    pub person_id: String,
    pub project_id: String,
    pub runner: String,
    pub model: Option<String>,
    /// The one-time task: it reaches the prompt and argv and is written nowhere.
    pub task: Option<String>,
    /// Where the roster is: a Person whose role is a roster role starts as it. `None`
    /// binds no role (the runner sees the host's context).
    pub roster: Option<RosterPlace>,
    /// The conversation id an earlier review of this start showed (the page reviews, then
    /// starts in a second request): the start takes that one, so the runner gets the id
    /// the review named. `None` chooses a new one.
    pub conversation: Option<String>,
}

/// Whether `text` is a conversation id as acompose makes them: a UUID in its 8-4-4-4-12
/// lowercase hex form.
pub fn is_conversation_id(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups.iter().zip([8, 4, 4, 4, 12]).all(|(group, length)| {
            group.len() == length && group.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
        })
}

/// A start review with what the driver resolved for it.
#[derive(Debug, Clone)]
pub struct Reviewed {
    pub review: StartReview,
    /// The runner's binary as found on `PATH`; `review.argv[0]` names it.
    pub program: PathBuf,
    /// The project folder (`review.cwd`), canonical.
    pub project_folder: PathBuf,
    /// What the runner's environment gains besides the People hints: a role's launch
    /// environment (`HOME` as the runtime home, `AGENT_COMPOSE_*`, …).
    pub environment: Vec<(String, OsString)>,
    /// The sandbox's binary (`bwrap`) for `session` isolation, when it was found.
    pub sandbox: Option<PathBuf>,
}

/// Builds the review of a start: the Person must exist and be active,
/// `projects/<project>` must be a link to an existing folder, the runner must be in the
/// table and on `path_variable`, the model one the runner takes. A Person bound to a
/// roster role is prepared as that role's assigned launch (which converges the home and
/// writes the role's runtime home, never a session); anything else writes nothing.
pub fn review_session(
    workspace: &Workspace,
    options: &StartOptions,
    path_variable: Option<&OsStr>,
) -> Result<Reviewed, Stop> {
    let person = existing_person(workspace, checked_id(&options.person_id)?)?;
    review_person(workspace, person, options, SessionLinks::default(), path_variable)
}

/// The review of a start of `person` (a saved one, or a swarm's ephemeral or re-roled
/// one), with the record's `links` (a run, a resumed session).
pub(crate) fn review_person(
    workspace: &Workspace,
    person: acompose_people::Person,
    options: &StartOptions,
    links: SessionLinks,
    path_variable: Option<&OsStr>,
) -> Result<Reviewed, Stop> {
    let roster = Roster { people: vec![person.clone()], ..Roster::default() };
    let conversation = match &options.conversation {
        Some(given) if is_conversation_id(given) => given.clone(),
        Some(_) => {
            return Err(Stop::Invalid(
                "`conversation` must be the conversation id a review gave (a lowercase UUID)".to_owned(),
            ));
        }
        None => new_conversation_id(),
    };
    // The engine checks everything but the folder and PATH; a dry review with a
    // placeholder folder reports those rejections first, before the disk is asked.
    let mut request = StartRequest {
        person_id: &person.id,
        project_id: &options.project_id,
        project_folder: "/",
        runner: &options.runner,
        model: options.model.as_deref(),
        task: options.task.as_deref(),
        conversation: Some(links.conversation.as_deref().unwrap_or(&conversation)),
    };
    review_start(&roster, &request).map_err(rejected)?;
    let project_folder = project_folder(workspace, &options.project_id)?;
    let Some(runner) = runner(&options.runner) else {
        return Err(rejected(StartRejection::UnknownRunner));
    };
    let Some(mut program) = find_binary(runner.binary, path_variable) else {
        return Err(Stop::Invalid(format!(
            "the runner `{}` is not installed: no executable `{}` was found on PATH",
            runner.name, runner.binary
        )));
    };
    let folder_text = project_folder
        .to_str()
        .ok_or_else(|| Stop::Invalid(format!("the folder of project `{}` is not a UTF-8 path", options.project_id)))?;
    request.project_folder = folder_text;
    let mut review = review_start(&roster, &request).map_err(rejected)?;
    review.links.run = links.run;
    review.links.ephemeral = links.ephemeral;
    review.links.resumed_from = links.resumed_from;
    // The engine knows `/`; which folder is the user's home only the environment says.
    let home = std::env::var_os("HOME").map(PathBuf::from).and_then(|home| fs::canonicalize(home).ok());
    if review.folder_warning.is_none() && home.as_deref() == Some(project_folder.as_path()) {
        review.folder_warning = Some(acompose_people::start::FolderWarning::Home);
    }
    let mut environment = Vec::new();
    match bound_role(&person.role, options.roster.as_ref()) {
        Bound::Role(role) => {
            let place = options.roster.as_ref().ok_or_else(|| Stop::Invalid("no roster".to_owned()))?;
            let as_role = prepare_role(place, &role, runner.name, &project_folder, path_variable)?;
            let mut sight = as_role.sight;
            sight.offer_person_mcp_servers(&person.mcp_servers);
            review.sight = Some(sight);
            program = as_role.program;
            environment = as_role.environment;
        }
        unbound => review.unbound_hint = unbound.hint(),
    }
    let sandbox = review_isolation(&mut review, &options.project_id, &project_folder, path_variable)?;
    Ok(Reviewed { review, program, project_folder, environment, sandbox })
}

/// Checks what the Person's isolation needs: a worktree needs the project to be a git
/// repository; a sandbox needs `bwrap` on `path_variable`, and without it `session`
/// isolation is reported as not enforced (it then gets its worktree only).
fn review_isolation(
    review: &mut StartReview,
    project_id: &str,
    project_folder: &Path,
    path_variable: Option<&OsStr>,
) -> Result<Option<PathBuf>, Stop> {
    if !super::isolation::has_worktree(review.isolation) {
        return Ok(None);
    }
    super::isolation::check_project(project_id, project_folder)?;
    if review.isolation != acompose_people::Isolation::Session {
        return Ok(None);
    }
    let sandbox = find_binary(super::isolation::SANDBOX_BINARY, path_variable);
    if sandbox.is_none() {
        review.unsupported.push(acompose_people::start::UnsupportedLimit::Isolation(review.isolation));
    }
    Ok(sandbox)
}

/// A random UUID (version 4) for a runner's new conversation, from the standard
/// library's per-process hash keys.
fn new_conversation_id() -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut words = [0u64; 2];
    for (index, word) in words.iter_mut().enumerate() {
        let mut hasher = std::hash::RandomState::new().build_hasher();
        hasher.write_usize(index);
        hasher.write_u32(std::process::id());
        *word = hasher.finish();
    }
    let [high, low] = words;
    let high = (high & 0xffff_ffff_ffff_0fff) | 0x4000;
    let low = (low & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xffff,
        low >> 48,
        low & 0xffff_ffff_ffff
    )
}

/// A start rejection as the stop the cli and the server report.
pub fn rejected(rejection: StartRejection) -> Stop {
    Stop::Invalid(rejection.message().to_owned())
}

/// Resolves `projects/<project_id>`: it must be a symlink to an existing folder (and
/// `projects` itself a real folder). Returns the canonical folder.
pub fn project_folder(workspace: &Workspace, project_id: &str) -> Result<PathBuf, Stop> {
    if !is_slug(project_id) {
        return Err(rejected(StartRejection::InvalidProjectId));
    }
    workspace.refuse_symlinks(&[PROJECTS_DIRECTORY])?;
    let link = workspace.path(&format!("{PROJECTS_DIRECTORY}/{project_id}"));
    let not_a_link = || {
        Stop::Invalid(format!(
            "`{PROJECTS_DIRECTORY}/{project_id}` must be a symbolic link to the project's folder; \
             create it with `ln -s /path/to/project {PROJECTS_DIRECTORY}/{project_id}`"
        ))
    };
    match fs::symlink_metadata(&link) {
        Ok(metadata) if metadata.file_type().is_symlink() => {}
        _ => return Err(not_a_link()),
    }
    let target = fs::canonicalize(&link).map_err(|_| {
        Stop::Invalid(format!("`{PROJECTS_DIRECTORY}/{project_id}` is a link to something that does not exist"))
    })?;
    if !target.is_dir() {
        return Err(Stop::Invalid(format!("`{PROJECTS_DIRECTORY}/{project_id}` is a link to a file, not a folder")));
    }
    Ok(target)
}

// ---------------------------------------------------------------------------------------
// Stopping a session from another process

/// What `stop` did.
#[derive(Debug, Clone)]
pub struct Stopped {
    /// The record as written (`stopped`), or as found when it had already ended.
    pub record: SessionRecord,
    /// False when the session had already ended; nothing was signalled.
    pub signalled: bool,
    /// Whether the runner's process group was empty afterwards.
    pub group_empty: bool,
}

/// Stops a running session: its record becomes `stopped` (under the lock, after
/// reconciliation so a dead or reused pid is never signalled), then its process group
/// gets SIGTERM and, after `grace`, SIGKILL. A session that already ended is left as it
/// is.
pub fn stop_session(workspace: &Workspace, id: &str, clock: &dyn Clock, grace: Duration) -> Result<Stopped, Stop> {
    if !session::is_session_id(id) {
        return Err(Stop::Invalid(format!("`{}` is not a session id", printable(id))));
    }
    let no_session = || Stop::Invalid(format!("there is no session `{id}` in `{SESSIONS_DIRECTORY}/`"));
    let folder = sessions_folder(workspace)?.ok_or_else(no_session)?;
    let guard = lock(&folder)?;
    let listing = reconcile_locked(&folder, clock)?;
    let mut record = match listing.records.into_iter().find(|record| record.id == id) {
        Some(record) => record,
        None => {
            // A refused record is reported as such rather than as missing.
            read_record(&folder, id)?;
            return Err(no_session());
        }
    };
    let Some(group) = record.pid.filter(|_| record.status == Status::Running) else {
        return Ok(Stopped { record, signalled: false, group_empty: true });
    };
    record
        .end(Ending::Stopped { exit_code: None }, clock.now())
        .map_err(|error| Stop::Invalid(error.message().to_owned()))?;
    replace_record(&folder, &record)?;
    drop(guard);
    let group_empty = process::end_group(group, grace)
        .map_err(|error| Stop::Io(FileError::caused(&folder, format!("cannot signal process group {group}"), error)))?;
    Ok(Stopped { record, signalled: true, group_empty })
}

// ---------------------------------------------------------------------------------------
// Resuming a session's conversation

/// Reviews `people resume SESSION`: the session must have ended and kept its runner's
/// conversation id, and its runner must reopen a conversation by id. The new session has
/// the same Person (or ephemeral role), project, runner and model, the same conversation
/// and `resumed_from` naming the old one; its argv opens the conversation instead of
/// giving a prompt.
pub fn review_resume(
    workspace: &Workspace,
    session_id: &str,
    roster: Option<RosterPlace>,
    path_variable: Option<&OsStr>,
) -> Result<Reviewed, Stop> {
    if !session::is_session_id(session_id) {
        return Err(Stop::Invalid(format!("`{}` is not a session id", printable(session_id))));
    }
    let listing = list_sessions(workspace, &SystemClock)?;
    let Some(old) = listing.records.into_iter().find(|record| record.id == session_id) else {
        return Err(Stop::Invalid(format!("there is no session `{session_id}` in `{SESSIONS_DIRECTORY}/`")));
    };
    let Some(table_row) = runner(&old.provider) else {
        return Err(rejected(StartRejection::UnknownRunner));
    };
    if table_row.conversation.is_none() {
        return Err(Stop::Invalid(format!(
            "session {session_id} cannot be resumed: the runner `{}` is not resumable ({})",
            table_row.name,
            acompose_people::runner::not_resumable_reason(table_row)
        )));
    }
    let Some(conversation) = old.links.conversation.clone() else {
        return Err(Stop::Invalid(format!(
            "session {session_id} cannot be resumed: its record keeps no conversation id (it was started before acompose recorded one)"
        )));
    };
    if !old.status.is_terminal() {
        return Err(Stop::Invalid(format!(
            "session {session_id} is still {}; stop it before resuming its conversation",
            old.status.as_str()
        )));
    }
    let person = if old.links.ephemeral {
        acompose_people::swarm::ephemeral_person(&old.role)
    } else {
        let mut person = existing_person(workspace, checked_id(&old.person_id)?)?;
        person.role.clone_from(&old.role);
        person
    };
    let options = StartOptions {
        person_id: person.id.clone(),
        project_id: old.project_id.clone(),
        runner: old.provider.clone(),
        model: old.model.clone(),
        task: None,
        roster,
        conversation: None,
    };
    let links = SessionLinks {
        conversation: Some(conversation.clone()),
        resumed_from: Some(old.id.clone()),
        run: old.links.run.clone(),
        ephemeral: old.links.ephemeral,
        ..SessionLinks::default()
    };
    let mut reviewed = review_person(workspace, person, &options, links, path_variable)?;
    let argv = acompose_people::runner::resume_invocation(table_row, old.model.as_deref(), &conversation)
        .unwrap_or_else(|| Ok(Vec::new()))
        .map_err(|_| rejected(StartRejection::InvalidModel))?;
    reviewed.review.argv = argv;
    reviewed.review.prompt = String::new();
    reviewed.review.prompt_in_argv = true;
    Ok(reviewed)
}
