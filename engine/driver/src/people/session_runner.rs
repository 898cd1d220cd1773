//! The PTY runner of People sessions: starts a reviewed runner in a pseudo-terminal and
//! keeps its record truthful until it ends. The runner is its own session and process
//! group leader (so the whole group can be signalled), works in the project folder and
//! gets the environment hints of the review. `launching` is written before the spawn and
//! `running` after it, both under the sessions lock; the end is written when the runner
//! has exited and its group is empty.
//!
//! A [`SessionHandle`] exposes the terminal (reader, writer, resize) and how to stop it;
//! it does no terminal handling of its own, so the cli and a server use it alike.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acompose_people::session::{self, Ending, MAX_RECORDS, SessionRecord};
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, waitid};

use super::sessions::{
    Clock, Reviewed, create_record, lock, made_sessions_folder, read_record, reconcile_locked, rejected, replace_record,
};
use super::storage::{Stop, Workspace};
use super::{isolation, process};
use crate::home::atomic::FileError;

/// The size of a terminal in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TerminalSize {
    pub rows: u16,
    pub cols: u16,
}

impl Default for TerminalSize {
    fn default() -> Self {
        Self { rows: 24, cols: 80 }
    }
}

impl TerminalSize {
    fn pty(self) -> PtySize {
        PtySize { rows: self.rows.max(1), cols: self.cols.max(1), pixel_width: 0, pixel_height: 0 }
    }
}

/// How a reviewed start goes ahead.
#[derive(Debug, Clone, Copy)]
pub struct LaunchOptions {
    /// The user acknowledged the limits a local PTY cannot enforce.
    pub acknowledge_unsupported: bool,
    pub size: TerminalSize,
    /// The time between SIGTERM and SIGKILL when the session is ended.
    pub grace: Duration,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        Self { acknowledge_unsupported: false, size: TerminalSize::default(), grace: super::sessions::DEFAULT_GRACE }
    }
}

enum Event {
    /// The runner exited (it is not collected yet).
    Exited,
    /// Someone asked to stop the session.
    Stop,
    /// The runner's usage record reached `budget.max_tokens`.
    BudgetExceeded,
    /// The session's host (its tmux pane) went away.
    HostGone,
}

/// A started session. Call [`SessionHandle::wait`] to see it to its end: that is what
/// enforces `budget.max_seconds` and writes the final record.
pub struct SessionHandle {
    record: SessionRecord,
    folder: PathBuf,
    master: Arc<Mutex<Box<dyn MasterPty + Send>>>,
    child: Box<dyn Child + Send + Sync>,
    events: Receiver<Event>,
    sender: Sender<Event>,
    max_seconds: Option<u64>,
    grace: Duration,
    clock: Arc<dyn Clock>,
    started: Instant,
    /// Whether the end was recorded (by `wait`, or by the drop of an unwaited handle).
    concluded: bool,
    /// Set when the session ends, so the usage watcher stops reading.
    ended: Arc<std::sync::atomic::AtomicBool>,
    /// The runtime home of a session as a role: what the runner wrote to its launch copy
    /// goes back to the user's file when the session ends.
    runtime: Option<PathBuf>,
}

impl Drop for SessionHandle {
    /// A handle dropped without `wait` (an error while attaching, a closed connection)
    /// stops its session rather than leave a runner nobody watches.
    fn drop(&mut self) {
        if !self.concluded {
            let _ = self.conclude(Cause::Stopped);
        }
    }
}

/// Asks a session to stop, from any thread; the session then ends as `stopped`.
#[derive(Clone)]
pub struct Stopper {
    sender: Sender<Event>,
}

impl Stopper {
    pub fn stop(&self) {
        // A session that already ended has dropped its receiver; nothing to stop.
        let _ = self.sender.send(Event::Stop);
    }

    /// Tells the session its host went away: it ends as `interrupted`.
    pub fn host_gone(&self) {
        let _ = self.sender.send(Event::HostGone);
    }
}

/// Resizes a session's terminal, from any thread.
#[derive(Clone)]
pub struct Resizer {
    master: Arc<Mutex<Box<dyn MasterPty + Send>>>,
}

impl Resizer {
    pub fn resize(&self, size: TerminalSize) -> Result<(), Stop> {
        let master = self.master.lock().map_err(|_| terminal_error("the terminal is no longer usable"))?;
        master.resize(size.pty()).map_err(|error| terminal_error(&format!("cannot resize the terminal: {error}")))
    }
}

/// How a session ended.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The final record as it is on disk.
    pub record: SessionRecord,
    /// Whether the runner's process group was empty at the end (nothing it started
    /// survives).
    pub group_empty: bool,
}

pub(crate) fn terminal_error(message: &str) -> Stop {
    Stop::Io(FileError::new(std::path::Path::new("/dev/ptmx"), message.to_owned()))
}

/// Starts a reviewed session. Refuses unacknowledged limits and a full sessions folder
/// before anything is written. Reconciles the folder, writes `launching`, spawns the
/// runner in a PTY, writes `running` with its pid and start time; a spawn that fails is
/// recorded as `failed`.
pub fn start_session(
    workspace: &Workspace,
    reviewed: &Reviewed,
    options: &LaunchOptions,
    clock: Arc<dyn Clock>,
) -> Result<SessionHandle, Stop> {
    let begun = begin(workspace, reviewed, options, clock.as_ref(), None)?;
    let Begun { guard, folder, mut record, placement } = begun;
    let command = runner_command(reviewed, &record.id, placement.as_ref());
    let (master, child) = match spawn_command(&command, options.size, false) {
        Ok(spawned) => spawned,
        Err(error) => {
            let _ = record.end(Ending::SpawnFailed, clock.now());
            replace_record(&folder, &record)?;
            return Err(error);
        }
    };
    let pid = child.process_id().unwrap_or(0);
    let start = process::stat(pid).ok().flatten().map(|stat| stat.start);
    let running = start.ok_or(()).and_then(|start| record.mark_running(pid, start).map_err(|_| ()));
    if running.is_err() {
        let _ = process::end_group(pid, options.grace);
        let _ = record.end(Ending::SpawnFailed, clock.now());
        replace_record(&folder, &record)?;
        return Err(terminal_error("the runner started but its process could not be observed"));
    }
    if let Err(error) = replace_record(&folder, &record) {
        // A runner whose record cannot say `running` is not left running.
        let _ = process::end_group(pid, options.grace);
        return Err(error);
    }
    drop(guard);
    let watch = super::budget::UsageWatch::for_session(reviewed, &record);
    let parts = HandleParts {
        record,
        folder,
        master,
        child,
        max_seconds: reviewed.review.max_seconds,
        grace: options.grace,
        usage: watch,
        runtime: runtime_home(reviewed),
    };
    Ok(SessionHandle::assemble(parts, clock))
}

/// What a start has done before the runner is spawned: the lock (held until `running`
/// is written), the folder, the `launching` record and an isolated session's placement.
pub(crate) struct Begun {
    pub(crate) guard: crate::home::transaction::Lock,
    pub(crate) folder: PathBuf,
    pub(crate) record: SessionRecord,
    pub(crate) placement: Option<Placement>,
}

/// Refuses unacknowledged limits and a full folder, reconciles, writes `launching`
/// (naming its `host`) and makes an isolated session's worktree; a worktree that cannot
/// be made ends the record `failed`.
pub(crate) fn begin(
    workspace: &Workspace,
    reviewed: &Reviewed,
    options: &LaunchOptions,
    clock: &dyn Clock,
    host: Option<&str>,
) -> Result<Begun, Stop> {
    reviewed.review.confirm(options.acknowledge_unsupported).map_err(rejected)?;
    let folder = made_sessions_folder(workspace)?;
    let guard = lock(&folder)?;
    let listing = reconcile_locked(&folder, clock)?;
    let mut refused: Vec<&str> =
        listing.findings.iter().map(|finding| finding.file.as_deref().unwrap_or_default()).collect();
    refused.dedup();
    let overfull = listing.findings.iter().any(|finding| finding.code == "too-many-records");
    if overfull || listing.records.len() + refused.len() >= MAX_RECORDS {
        return Err(Stop::Invalid(format!(
            "`{}` is full ({MAX_RECORDS} records); move old records out before starting another session",
            session::SESSIONS_DIRECTORY
        )));
    }
    let mut record = launching_record(workspace, &folder, reviewed, clock, host)?;
    match prepare_isolation(workspace, reviewed, &record) {
        Ok(placement) => Ok(Begun { guard, folder, record, placement }),
        Err(error) => {
            let _ = record.end(Ending::SpawnFailed, clock.now());
            replace_record(&folder, &record)?;
            Err(error)
        }
    }
}

/// Writes the `launching` record under a new id (another nonce when the name is taken).
/// An isolated session's `cwd` is its worktree, named for the id.
fn launching_record(
    workspace: &Workspace,
    folder: &std::path::Path,
    reviewed: &Reviewed,
    clock: &dyn Clock,
    host: Option<&str>,
) -> Result<SessionRecord, Stop> {
    let now = clock.now();
    for attempt in 0..16u32 {
        let Some(id) = session::session_id(&now, &reviewed.review.person_id, nonce(attempt)) else {
            break;
        };
        let mut launch = reviewed.review.launch(&id, now.clone());
        launch.links.host = host.map(str::to_owned);
        if isolation::has_worktree(reviewed.review.isolation) {
            let worktree = isolation::worktree_folder(workspace, &id)?;
            let text = worktree.to_str().ok_or_else(|| {
                Stop::Invalid("the workspace's folder is not a UTF-8 path; a worktree cannot be recorded".to_owned())
            })?;
            launch.cwd = text.to_owned();
            launch.links.isolation = Some(reviewed.review.isolation);
            launch.links.worktree = Some(text.to_owned());
            launch.links.branch = session::session_branch(&reviewed.review.person_id, &id);
        }
        let record = SessionRecord::launching(launch);
        if create_record(folder, &record)? {
            return Ok(record);
        }
    }
    Err(Stop::Invalid("no free session id could be found; try again".to_owned()))
}

/// A random number from the standard library's per-process hash keys.
pub(crate) fn nonce(attempt: u32) -> u32 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::hash::RandomState::new().build_hasher();
    hasher.write_u32(attempt);
    hasher.write_u32(std::process::id());
    let value = hasher.finish();
    u32::try_from(value & u64::from(u32::MAX)).unwrap_or_default()
}

pub(crate) type Spawned = (Box<dyn MasterPty + Send>, Box<dyn Child + Send + Sync>);

/// Where an isolated runner works, and its sandbox.
pub(crate) struct Placement {
    worktree: PathBuf,
    sandbox: Option<isolation::Sandbox>,
}

/// Makes an isolated session's worktree (and its sandbox's folders) before the spawn;
/// `None` for `inherited` isolation.
fn prepare_isolation(
    workspace: &Workspace,
    reviewed: &Reviewed,
    record: &SessionRecord,
) -> Result<Option<Placement>, Stop> {
    let (Some(worktree), Some(branch)) = (&record.links.worktree, &record.links.branch) else {
        return Ok(None);
    };
    let worktree = PathBuf::from(worktree);
    isolation::make_worktree(&reviewed.project_folder, &worktree, branch)?;
    let sandbox = match &reviewed.sandbox {
        Some(program) if reviewed.review.isolation == acompose_people::Isolation::Session => {
            let runtime = runtime_home(reviewed);
            Some(isolation::prepare_sandbox(workspace, program, &record.id, &worktree, runtime.as_deref())?)
        }
        _ => None,
    };
    Ok(Some(Placement { worktree, sandbox }))
}

/// The runtime home of a session started as a roster role.
pub(crate) fn runtime_home(reviewed: &Reviewed) -> Option<PathBuf> {
    reviewed
        .environment
        .iter()
        .find(|(name, _)| name == crate::convergence::launch::RUNTIME_VARIABLE)
        .map(|(_, value)| PathBuf::from(value))
}

/// What a runner is started with: `argv[0]` is the binary found on `PATH`, the rest is
/// exactly the review's; an isolated runner works in its worktree, a sandboxed one runs
/// inside `bwrap` with its own `TMPDIR`. `environment` is what the runner's environment
/// gains (all of it for a hosted runner, whose supervisor starts from an empty one).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct RunnerCommand {
    pub(crate) argv: Vec<std::ffi::OsString>,
    pub(crate) cwd: PathBuf,
    pub(crate) environment: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

pub(crate) fn runner_command(reviewed: &Reviewed, session_id: &str, placement: Option<&Placement>) -> RunnerCommand {
    let mut argv = vec![reviewed.program.clone().into_os_string()];
    argv.extend(reviewed.review.argv.iter().skip(1).map(std::ffi::OsString::from));
    let cwd = placement.map_or(reviewed.project_folder.clone(), |placement| placement.worktree.clone());
    let sandbox = placement.and_then(|placement| placement.sandbox.as_ref());
    if let Some(sandbox) = sandbox {
        argv = sandbox.wrap(argv, &cwd);
    }
    let mut environment: Vec<(std::ffi::OsString, std::ffi::OsString)> =
        reviewed.environment.iter().map(|(name, value)| (name.into(), value.clone())).collect();
    if let Some(sandbox) = sandbox {
        environment.push(("TMPDIR".into(), sandbox.scratch.clone().into_os_string()));
    }
    for (name, value) in reviewed.review.environment(session_id) {
        environment.push((name.into(), value.into()));
    }
    RunnerCommand { argv, cwd, environment }
}

/// Opens a PTY and spawns `command` in it; with `clear`, the runner's environment is
/// exactly `command.environment`, else the caller's plus it.
pub(crate) fn spawn_command(command: &RunnerCommand, size: TerminalSize, clear: bool) -> Result<Spawned, Stop> {
    let program = PathBuf::from(command.argv.first().cloned().unwrap_or_default());
    let failed = |message: String| Stop::Io(FileError::new(&program, message));
    let pair = native_pty_system()
        .openpty(size.pty())
        .map_err(|error| terminal_error(&format!("cannot open a terminal for the runner: {error}")))?;
    let mut builder = CommandBuilder::from_argv(command.argv.clone());
    builder.cwd(&command.cwd);
    if clear {
        builder.env_clear();
    }
    for (name, value) in &command.environment {
        builder.env(name, value);
    }
    let child = pair
        .slave
        .spawn_command(builder)
        .map_err(|error| failed(format!("cannot start `{}`: {error}", program.display())))?;
    // The runner holds the terminal's other end now; ours would keep it open forever.
    drop(pair.slave);
    Ok((pair.master, child))
}

/// Tells `sender` when `pid` has exited, without collecting it: the pid stays taken
/// until the end is recorded, so no reconciliation can mistake it for gone.
fn watch_exit(pid: u32, sender: Sender<Event>) {
    std::thread::spawn(move || {
        if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
            while let Err(rustix::io::Errno::INTR) =
                waitid(WaitId::Pid(pid), WaitIdOptions::EXITED | WaitIdOptions::NOWAIT)
            {}
        }
        let _ = sender.send(Event::Exited);
    });
}

/// How the wait ended before the runner was collected.
#[derive(Clone, Copy)]
enum Cause {
    Exited,
    Stopped,
    TimedOut,
    BudgetExceeded,
    HostGone,
}

/// Everything a handle is made of.
pub(crate) struct HandleParts {
    pub(crate) record: SessionRecord,
    pub(crate) folder: PathBuf,
    pub(crate) master: Box<dyn MasterPty + Send>,
    pub(crate) child: Box<dyn Child + Send + Sync>,
    pub(crate) max_seconds: Option<u64>,
    pub(crate) grace: Duration,
    pub(crate) usage: Option<super::budget::UsageWatch>,
    pub(crate) runtime: Option<PathBuf>,
}

impl SessionHandle {
    /// The handle of a runner that is running and recorded so: its exit and its usage
    /// record are watched from here on, and the time limit counts from now.
    pub(crate) fn assemble(parts: HandleParts, clock: Arc<dyn Clock>) -> SessionHandle {
        let HandleParts { record, folder, master, child, max_seconds, grace, usage, runtime } = parts;
        let (sender, events) = mpsc::channel();
        watch_exit(record.pid.unwrap_or(0), sender.clone());
        let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
        if let Some(watch) = usage {
            let budget = sender.clone();
            watch.watch(Arc::clone(&ended), move || {
                let _ = budget.send(Event::BudgetExceeded);
            });
        }
        SessionHandle {
            record,
            folder,
            master: Arc::new(Mutex::new(master)),
            child,
            events,
            sender,
            max_seconds,
            grace,
            clock,
            started: Instant::now(),
            concluded: false,
            ended,
            runtime,
        }
    }

    pub fn id(&self) -> &str {
        &self.record.id
    }

    /// The record as written when the runner started (`running`).
    pub fn record(&self) -> &SessionRecord {
        &self.record
    }

    /// A reader of the terminal's output. Reading ends (EOF or an error) once the
    /// runner and everything it started have exited.
    pub fn reader(&self) -> Result<Box<dyn Read + Send>, Stop> {
        let master = self.master.lock().map_err(|_| terminal_error("the terminal is no longer usable"))?;
        master.try_clone_reader().map_err(|error| terminal_error(&format!("cannot read the terminal: {error}")))
    }

    /// The writer of the terminal's input; it can be taken once.
    pub fn take_writer(&self) -> Result<Box<dyn Write + Send>, Stop> {
        let master = self.master.lock().map_err(|_| terminal_error("the terminal is no longer usable"))?;
        master.take_writer().map_err(|error| terminal_error(&format!("cannot write to the terminal: {error}")))
    }

    pub fn resizer(&self) -> Resizer {
        Resizer { master: Arc::clone(&self.master) }
    }

    pub fn stopper(&self) -> Stopper {
        Stopper { sender: self.sender.clone() }
    }

    /// Waits for the session to end and records how: `completed`/`failed` when the
    /// runner exits on its own (ended by SIGINT, the terminal's Ctrl-C, counts as
    /// `stopped`), `timed_out` when `max_seconds` runs out, `budget_exceeded` when the
    /// runner's usage record reaches `max_tokens`, `stopped` when a
    /// [`Stopper`] asked. Ending sends SIGTERM to the runner's group, then SIGKILL after
    /// the grace period; whatever of the group is left when the runner exits is ended
    /// the same way. A record another process already ended (`people stop`) is kept.
    pub fn wait(mut self) -> Result<Finished, Stop> {
        let cause = self.wait_for_cause();
        self.conclude(cause)
    }

    /// Ends what is left of the runner's group, collects the runner and writes the end.
    fn conclude(&mut self, cause: Cause) -> Result<Finished, Stop> {
        self.concluded = true;
        self.ended.store(true, std::sync::atomic::Ordering::Relaxed);
        let group = self.record.pid.unwrap_or(0);
        if !matches!(cause, Cause::Exited) {
            self.end_runner(group);
        }
        let group_empty = process::end_group(group, self.grace).unwrap_or(false);
        let guard = lock(&self.folder)?;
        let exit_code = self.collect();
        let ending = match (cause, exit_code) {
            (Cause::Exited, Some(code)) if code == 128 + Signal::INT.as_raw() => Ending::Stopped { exit_code },
            (Cause::Exited, Some(code)) => Ending::Exited { exit_code: code },
            (Cause::Exited, None) => Ending::Interrupted,
            (Cause::Stopped, _) => Ending::Stopped { exit_code },
            (Cause::TimedOut, _) => Ending::TimedOut { exit_code },
            (Cause::BudgetExceeded, _) => Ending::BudgetExceeded { exit_code },
            (Cause::HostGone, _) => Ending::Interrupted,
        };
        let on_disk = read_record(&self.folder, &self.record.id).ok().flatten();
        let record = match on_disk {
            Some(record) if record.status.is_terminal() => record,
            _ => {
                let mut record = self.record.clone();
                record.end(ending, self.clock.now()).map_err(|error| Stop::Invalid(error.message().to_owned()))?;
                replace_record(&self.folder, &record)?;
                record
            }
        };
        drop(guard);
        if let Some(runtime) = &self.runtime {
            // A failure is met again, and reported, by the next start or convergence.
            let _ = crate::delivery::runtime_home::carry_back(runtime);
        }
        Ok(Finished { record, group_empty })
    }

    fn wait_for_cause(&self) -> Cause {
        let event = match self.max_seconds.map(|seconds| self.started + Duration::from_secs(seconds)) {
            Some(deadline) => match self.events.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(event) => event,
                Err(RecvTimeoutError::Timeout) => return Cause::TimedOut,
                Err(RecvTimeoutError::Disconnected) => return Cause::Exited,
            },
            None => self.events.recv().unwrap_or(Event::Exited),
        };
        match event {
            Event::Exited => Cause::Exited,
            Event::Stop => Cause::Stopped,
            Event::BudgetExceeded => Cause::BudgetExceeded,
            Event::HostGone => Cause::HostGone,
        }
    }

    /// SIGTERM to the group, SIGKILL after the grace period if the runner has not
    /// exited, then waits (bounded) for its exit.
    fn end_runner(&self, group: u32) {
        let _ = process::signal_group(group, Signal::TERM);
        if self.exited_within(self.grace) {
            return;
        }
        let _ = process::signal_group(group, Signal::KILL);
        self.exited_within(self.grace);
    }

    fn exited_within(&self, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        loop {
            match self.events.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(Event::Exited) => return true,
                Ok(Event::Stop | Event::BudgetExceeded | Event::HostGone) => {}
                Err(_) => return false,
            }
        }
    }

    /// Collects the runner's exit status: its code, or 128 + the signal that ended it.
    fn collect(&mut self) -> Option<i32> {
        let child: &mut dyn Child = self.child.as_mut();
        if let Some(child) = child.downcast_mut::<std::process::Child>() {
            use std::os::unix::process::ExitStatusExt as _;
            let status = match child.try_wait() {
                Ok(Some(status)) => status,
                _ => return None,
            };
            return status.code().or_else(|| status.signal().map(|signal| 128 + signal));
        }
        match self.child.try_wait() {
            Ok(Some(status)) => i32::try_from(status.exit_code()).ok(),
            _ => None,
        }
    }
}
