//! Sessions hosted by the workspace's tmux server, so they outlive the command that
//! started them. Two halves meet over a Unix socket in the owner-only tmux state folder
//! (nothing of the handoff reaches a file):
//!
//! - the **starter** ([`start_hosted`]: `people start`, `serve`) reviews, writes
//!   `launching` under the sessions lock, starts a tmux session running `acompose people
//!   host HANDOFF`, hands it the runner's command line, environment and limits, and
//!   writes `running` with the pid the supervisor reports; then it lets go of the lock;
//! - the **supervisor** ([`supervise`], inside the tmux pane) spawns the runner in a
//!   terminal of its own, reports its pid, waits for the starter's word that the record
//!   says `running`, and from then on is what a [`SessionHandle`] is for `people start`
//!   without tmux: it enforces `max_seconds` and `max_tokens` whoever is attached, and
//!   writes the end. A starter that stops before the record says `running` leaves a
//!   supervisor that ends its runner; the `launching` record is then reconciled.
//!
//! The supervisor forwards output to the pane only once the starter says `go` (or closes
//! the socket), so a starter that follows the session sees it from its first byte.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use acompose_people::session::{Ending, HOST_TMUX, SessionRecord, Status};
use serde::{Deserialize, Serialize};

use super::budget::UsageWatch;
use super::process;
use super::session_runner::{
    Begun, HandleParts, LaunchOptions, RunnerCommand, SessionHandle, TerminalSize, begin, nonce, runner_command,
    runtime_home, spawn_command, terminal_error,
};
use super::sessions::{Clock, Reviewed, lock, made_sessions_folder, read_record, replace_record};
use super::storage::{Stop, Workspace};
use super::tmux::Host;
use crate::home::atomic::FileError;

/// How long the starter waits for the supervisor to connect and to spawn the runner.
const HANDOFF_WAIT: Duration = Duration::from_secs(20);
/// The largest handoff accepted, in bytes.
const MAX_PLAN_BYTES: u64 = 4 * 1024 * 1024;

/// What the supervisor needs to run and watch the runner.
#[derive(Serialize, Deserialize)]
struct Plan {
    session: String,
    command: RunnerCommand,
    max_seconds: Option<u64>,
    grace_ms: u64,
    usage: Option<UsageWatch>,
    runtime: Option<PathBuf>,
}

/// What the supervisor answers once it has tried to spawn.
#[derive(Serialize, Deserialize)]
struct Spawned {
    pid: Option<u32>,
    start: Option<u64>,
    error: Option<String>,
}

/// A session started in tmux. Dropping it (or [`Hosted::release`]) lets the supervisor
/// forward the runner's output: hold it until whatever follows the session is attached.
pub struct Hosted {
    record: SessionRecord,
    host: Host,
    stream: Option<UnixStream>,
}

impl Hosted {
    pub fn id(&self) -> &str {
        &self.record.id
    }

    /// The record as written when the runner started (`running`).
    pub fn record(&self) -> &SessionRecord {
        &self.record
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Tells the supervisor to go on.
    pub fn release(mut self) {
        if let Some(mut stream) = self.stream.take() {
            let _ = stream.write_all(b"go\n");
        }
    }
}

/// Starts a reviewed session inside the workspace's tmux server (see the module).
pub fn start_hosted(
    workspace: &Workspace,
    reviewed: &Reviewed,
    options: &LaunchOptions,
    clock: Arc<dyn Clock>,
    host: &Host,
) -> Result<Hosted, Stop> {
    let Begun { guard, folder, mut record, placement } =
        begin(workspace, reviewed, options, clock.as_ref(), Some(HOST_TMUX))?;
    let plan = Plan {
        session: record.id.clone(),
        command: hosted_command(runner_command(reviewed, &record.id, placement.as_ref())),
        max_seconds: reviewed.review.max_seconds,
        grace_ms: u64::try_from(options.grace.as_millis()).unwrap_or(u64::MAX),
        usage: UsageWatch::for_session(reviewed, &record),
        runtime: runtime_home(reviewed),
    };
    let fail = |record: &mut SessionRecord, error: Stop| -> Stop {
        let _ = record.end(Ending::SpawnFailed, clock.now());
        match replace_record(&folder, record) {
            Ok(()) => error,
            Err(written) => written,
        }
    };
    let (stream, spawned) = match hand_off(workspace, host, &plan, options.size) {
        Ok(handed) => handed,
        Err(error) => {
            host.kill_session(&record.id);
            return Err(fail(&mut record, error));
        }
    };
    let (Some(pid), Some(start)) = (spawned.pid, spawned.start) else {
        let said = spawned.error.unwrap_or_else(|| "the supervisor reported no process".to_owned());
        return Err(fail(&mut record, Stop::Io(FileError::new(&reviewed.program, said))));
    };
    if record.mark_running(pid, start).is_err() {
        let _ = process::end_group(pid, options.grace);
        return Err(fail(&mut record, terminal_error("the runner started but could not be recorded")));
    }
    if let Err(error) = replace_record(&folder, &record) {
        // A runner whose record cannot say `running` is not left running.
        let _ = process::end_group(pid, options.grace);
        return Err(error);
    }
    let mut stream = stream;
    if stream.write_all(b"running\n").is_err() {
        // The supervisor is gone; reconciliation will see it.
        return Ok(Hosted { record, host: host.clone(), stream: None });
    }
    drop(guard);
    Ok(Hosted { record, host: host.clone(), stream: Some(stream) })
}

/// The runner's whole environment: the starter's, with the launch's additions over it,
/// so the runner sees what it would see started from here (the tmux server's own
/// environment is whoever started it first).
fn hosted_command(mut command: RunnerCommand) -> RunnerCommand {
    let added = std::mem::take(&mut command.environment);
    let mut environment: Vec<(std::ffi::OsString, std::ffi::OsString)> =
        std::env::vars_os().filter(|(name, _)| !added.iter().any(|(added, _)| added == name)).collect();
    environment.extend(added);
    command.environment = environment;
    command
}

/// Starts the tmux session, waits for its supervisor on a fresh socket, sends the plan
/// and reads what it spawned.
fn hand_off(
    workspace: &Workspace,
    host: &Host,
    plan: &Plan,
    size: TerminalSize,
) -> Result<(UnixStream, Spawned), Stop> {
    let io = |path: &Path, what: &str, error: std::io::Error| {
        Stop::Io(FileError::caused(path, format!("{what} `{}`", path.display()), error))
    };
    host.prepare(workspace)?;
    let handoff = host.state.join(format!("h-{:08x}", nonce(0)));
    let _ = std::fs::remove_file(&handoff);
    let listener = UnixListener::bind(&handoff).map_err(|error| io(&handoff, "cannot listen on", error))?;
    let workspace_folder = workspace.path("");
    let argv = [
        host.supervisor.as_os_str(),
        "people".as_ref(),
        "host".as_ref(),
        "--workspace".as_ref(),
        workspace_folder.as_os_str(),
        handoff.as_os_str(),
    ];
    let started = host.new_session(&plan.session, size.cols.max(1), size.rows.max(1), &argv);
    let accepted = started.and_then(|()| accept_within(&listener, &handoff, HANDOFF_WAIT));
    let _ = std::fs::remove_file(&handoff);
    let mut stream = accepted?;
    let bytes =
        serde_json::to_vec(plan).map_err(|error| terminal_error(&format!("cannot encode the handoff: {error}")))?;
    stream
        .write_all(&bytes)
        .and_then(|()| stream.write_all(b"\n"))
        .map_err(|error| io(&handoff, "cannot hand the session over through", error))?;
    stream.set_read_timeout(Some(HANDOFF_WAIT)).map_err(|error| io(&handoff, "cannot wait on", error))?;
    let mut line = String::new();
    BufReader::new(&stream)
        .read_line(&mut line)
        .map_err(|error| io(&handoff, "the supervisor did not answer on", error))?;
    stream.set_read_timeout(None).map_err(|error| io(&handoff, "cannot wait on", error))?;
    let spawned: Spawned = serde_json::from_str(&line).map_err(|_| {
        Stop::Io(FileError::new(&handoff, "the session's supervisor ended before it started the runner".to_owned()))
    })?;
    Ok((stream, spawned))
}

/// Accepts one connection, or fails after `limit`.
fn accept_within(listener: &UnixListener, path: &Path, limit: Duration) -> Result<UnixStream, Stop> {
    let (sender, receiver) = mpsc::channel();
    let listener =
        listener.try_clone().map_err(|error| Stop::Io(FileError::caused(path, "cannot listen".to_owned(), error)))?;
    std::thread::spawn(move || {
        let _ = sender.send(listener.accept().map(|(stream, _)| stream));
    });
    match receiver.recv_timeout(limit) {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(error)) => Err(Stop::Io(FileError::caused(path, "cannot accept the supervisor".to_owned(), error))),
        Err(_) => {
            // Unblock the accepting thread before giving up.
            let _ = UnixStream::connect(path);
            Err(Stop::Io(FileError::new(
                path,
                format!("the session's supervisor did not start within {} seconds", limit.as_secs()),
            )))
        }
    }
}

/// The supervisor's word from the starter that the runner may go on.
pub struct Gate {
    reader: BufReader<UnixStream>,
}

impl Gate {
    /// Returns once the starter says `go` or lets go of the socket.
    pub fn wait(mut self) {
        let mut line = String::new();
        let _ = self.reader.read_line(&mut line);
    }
}

/// The supervisor's half: connects to `handoff`, spawns the runner the starter describes
/// in a terminal of its own, reports it, and returns its handle once the record says
/// `running`. The terminal's size is `size` (the pane's).
pub fn supervise(
    workspace: &Workspace,
    handoff: &Path,
    size: TerminalSize,
    clock: Arc<dyn Clock>,
) -> Result<(SessionHandle, Gate), Stop> {
    let io = |what: &str, error: std::io::Error| {
        Stop::Io(FileError::caused(handoff, format!("{what} `{}`", handoff.display()), error))
    };
    let stream = UnixStream::connect(handoff).map_err(|error| io("cannot reach the starter at", error))?;
    let mut reader = BufReader::new(stream.try_clone().map_err(|error| io("cannot read", error))?);
    let mut line = Vec::new();
    (&mut reader).take(MAX_PLAN_BYTES).read_until(b'\n', &mut line).map_err(|error| io("cannot read", error))?;
    let plan: Plan = serde_json::from_slice(&line)
        .map_err(|_| Stop::Invalid("the starter's handoff could not be read".to_owned()))?;
    let mut command = plan.command;
    // The pane's terminal type, not the starter's: the runner draws into this pane.
    if let Some(term) = std::env::var_os("TERM") {
        command.environment.retain(|(name, _)| name != "TERM");
        command.environment.push(("TERM".into(), term));
    }
    let mut writer = stream;
    let (master, child) = match spawn_command(&command, size, true) {
        Ok(spawned) => spawned,
        Err(error) => {
            let said = Spawned { pid: None, start: None, error: Some(stop_text(&error)) };
            let _ = writer.write_all(&serde_json::to_vec(&said).unwrap_or_default());
            let _ = writer.write_all(b"\n");
            return Err(error);
        }
    };
    let pid = child.process_id().unwrap_or(0);
    let start = process::stat(pid).ok().flatten().map(|stat| stat.start);
    let said = Spawned { pid: Some(pid), start, error: None };
    let grace = Duration::from_millis(plan.grace_ms);
    let confirmed = writer
        .write_all(&serde_json::to_vec(&said).unwrap_or_default())
        .and_then(|()| writer.write_all(b"\n"))
        .and_then(|()| {
            let mut word = String::new();
            reader.read_line(&mut word).map(|_| word)
        });
    let folder = made_sessions_folder(workspace)?;
    let record = match confirmed {
        Ok(word) if word.trim() == "running" => recorded(&folder, &plan.session, pid)?,
        _ => None,
    };
    let Some(record) = record else {
        // The starter stopped before the record said `running`: nobody may keep this runner.
        let _ = process::end_group(pid, grace);
        return Err(Stop::Invalid("the starter stopped before the session was recorded as running".to_owned()));
    };
    let parts = HandleParts {
        record,
        folder,
        master,
        child,
        max_seconds: plan.max_seconds,
        grace,
        usage: plan.usage,
        runtime: plan.runtime,
    };
    Ok((SessionHandle::assemble(parts, clock), Gate { reader }))
}

/// A stop as one line for the starter to report.
fn stop_text(stop: &Stop) -> String {
    match stop {
        Stop::Io(error) => error.to_string(),
        Stop::Invalid(message) => message.clone(),
        Stop::Findings(_) | Stop::Reported => "the runner could not be started".to_owned(),
    }
}

/// The record of `id` when it says `running` with `pid`.
fn recorded(folder: &Path, id: &str, pid: u32) -> Result<Option<SessionRecord>, Stop> {
    let _guard = lock(folder)?;
    Ok(read_record(folder, id)?.filter(|record| record.status == Status::Running && record.pid == Some(pid)))
}

/// The session's host when it is hosted here: the session is `running`, its record names
/// tmux, and the workspace's server holds it.
pub fn hosted_session(record: &SessionRecord, host: &Host) -> bool {
    record.status == Status::Running
        && record.links.host.as_deref() == Some(HOST_TMUX)
        && super::tmux::hosted_sessions(&host.tmux, &host.socket).is_some_and(|names| names.contains(&record.id))
}
