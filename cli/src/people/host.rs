//! Sessions hosted in the workspace's tmux server: `people host` (the supervisor a tmux
//! session runs; hidden), `people attach`, and following a hosted session from the
//! command that started it. With a terminal, following is a tmux client (`tmux attach`:
//! Ctrl-b d detaches); without one, a control-mode client whose output is the pane's
//! bytes and whose input is typed with `send-keys`. SIGINT (without a terminal), SIGTERM
//! and SIGHUP detach the follower: the session goes on.

use std::io::{IsTerminal as _, Read as _, Write as _};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, mpsc};

use acompose_driver::people::hosted::{Hosted, hosted_session, supervise};
use acompose_driver::people::session::{SessionRecord, Status, is_session_id};
use acompose_driver::people::sessions::{SystemClock, list_sessions};
use acompose_driver::people::tmux::{Followed, Host, Hosting, hosting};
use acompose_driver::people::{Stop, Workspace, printable};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::WorkspaceArgs;
use super::attach;

#[derive(Debug, clap::Args)]
pub struct HostArgs {
    /// The starter's handoff socket.
    pub handoff: PathBuf,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
}

#[derive(Debug, clap::Args)]
pub struct AttachArgs {
    /// The running session (see `acompose people sessions`).
    pub session: String,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
}

/// The hosting of `workspace`'s sessions with this binary as the supervisor.
pub fn workspace_hosting(workspace: &Workspace) -> Hosting {
    match std::env::current_exe() {
        Ok(program) => hosting(workspace, std::env::var_os("PATH").as_deref(), program),
        Err(_) => Hosting::Missing("acompose cannot find its own binary".to_owned()),
    }
}

/// The supervisor inside a tmux session: runs the runner with the pane as its terminal
/// until it ends. SIGHUP (the pane closed: tmux ended) ends it `interrupted`.
pub fn run_host(args: &HostArgs) -> Result<(), Stop> {
    let workspace = Workspace::open(&args.workspace.workspace)?;
    let size = attach::terminal_size().unwrap_or_default();
    let (handle, gate) = supervise(&workspace, &args.handoff, size, Arc::new(SystemClock))?;
    gate.wait();
    attach::attach_hosted(handle).map(|_| ())
}

/// How following a hosted session ended.
pub enum FollowEnd {
    /// The session ended: its final record.
    Ended(Box<SessionRecord>),
    /// The follower detached; the session goes on.
    Detached(String),
}

/// The signals that detach a follower, caught from before the session is named so none
/// of them ends the command instead.
pub fn detaching_signals() -> Option<Signals> {
    Signals::new([SIGHUP, SIGTERM, SIGINT]).ok()
}

/// Follows a hosted session until it ends or the follower detaches (on one of `signals`).
/// `hosted` (a start) is released once the follower is attached, so no output is missed.
pub fn follow(
    workspace: &Workspace,
    host: &Host,
    id: &str,
    hosted: Option<Hosted>,
    signals: Option<Signals>,
) -> Result<FollowEnd, Stop> {
    if std::io::stdin().is_terminal() {
        follow_in_terminal(host, id, hosted, signals)?;
    } else {
        follow_without_terminal(host, id, hosted, signals)?;
    }
    let listing = list_sessions(workspace, &SystemClock)?;
    let record = listing.records.into_iter().find(|record| record.id == id);
    match record {
        Some(record) if record.status.is_terminal() => Ok(FollowEnd::Ended(Box::new(record))),
        _ => Ok(FollowEnd::Detached(id.to_owned())),
    }
}

fn tmux_error(host: &Host, error: &std::io::Error) -> Stop {
    Stop::Invalid(format!("cannot run `{}`: {error}", host.tmux.display()))
}

fn follow_in_terminal(host: &Host, id: &str, hosted: Option<Hosted>, signals: Option<Signals>) -> Result<(), Stop> {
    let mut client = host.attach_command(id).spawn().map_err(|error| tmux_error(host, &error))?;
    // The tmux screen keeps what the runner drew before the client is up.
    if let Some(hosted) = hosted {
        hosted.release();
    }
    let client_pid = client.id();
    let closer = signals.as_ref().map(Signals::handle);
    let watcher = signals.map(|mut signals| {
        std::thread::spawn(move || {
            if signals.forever().next().is_some()
                && let Some(pid) = i32::try_from(client_pid).ok().and_then(rustix::process::Pid::from_raw)
            {
                // A tmux client ended by SIGTERM detaches; the session goes on.
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
        })
    });
    let _ = client.wait();
    if let Some(closer) = closer {
        closer.close();
    }
    if let Some(watcher) = watcher {
        let _ = watcher.join();
    }
    Ok(())
}

fn follow_without_terminal(
    host: &Host,
    id: &str,
    hosted: Option<Hosted>,
    signals: Option<Signals>,
) -> Result<(), Stop> {
    let mut follower = host.follow(id)?;
    let Some(mut reader) = follower.take_reader() else {
        return Ok(());
    };
    let follower = Arc::new(Mutex::new(follower));
    let (attached, is_attached) = mpsc::channel();
    let copier = std::thread::spawn(move || {
        let mut stdout = std::io::stdout();
        loop {
            match reader.next_event() {
                Followed::Output(bytes) => {
                    let _ = stdout.write_all(&bytes).and_then(|()| stdout.flush());
                }
                Followed::Attached => {
                    let _ = attached.send(());
                }
                Followed::Exit => return,
            }
        }
    });
    // Released once attached, or once the client ended without attaching.
    let _ = is_attached.recv();
    if let Some(hosted) = hosted {
        hosted.release();
    }
    forward_input(Arc::clone(&follower));
    let closer = signals.as_ref().map(Signals::handle);
    let detacher = signals.map(|mut signals| {
        let follower = Arc::clone(&follower);
        std::thread::spawn(move || {
            if signals.forever().next().is_some() {
                follower.lock().unwrap_or_else(PoisonError::into_inner).detach();
            }
        })
    });
    let _ = copier.join();
    follower.lock().unwrap_or_else(PoisonError::into_inner).wait();
    if let Some(closer) = closer {
        closer.close();
    }
    if let Some(detacher) = detacher {
        let _ = detacher.join();
    }
    Ok(())
}

/// Types stdin into the pane until stdin ends.
fn forward_input(follower: Arc<Mutex<acompose_driver::people::tmux::Follower>>) {
    std::thread::spawn(move || {
        let mut buffer = [0u8; 1024];
        let mut stdin = std::io::stdin();
        while let Ok(count) = stdin.read(&mut buffer) {
            let Some(chunk) = buffer.get(..count).filter(|chunk| !chunk.is_empty()) else {
                break;
            };
            if follower.lock().unwrap_or_else(PoisonError::into_inner).input(chunk).is_err() {
                return;
            }
        }
    });
}

/// `people attach SESSION`: follows a running hosted session.
pub fn run_attach(args: &AttachArgs, terminal: &crate::terminal::Terminal) -> Result<(), Stop> {
    let signals = detaching_signals();
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    if !is_session_id(&args.session) {
        return Err(Stop::Invalid(format!("`{}` is not a session id", printable(&args.session))));
    }
    let listing = list_sessions(&workspace, &SystemClock)?;
    let Some(record) = listing.records.into_iter().find(|record| record.id == args.session) else {
        return Err(Stop::Invalid(format!("there is no session `{}`", args.session)));
    };
    if record.status != Status::Running {
        return Err(Stop::Invalid(format!(
            "session {} is {}; there is nothing to attach to",
            record.id,
            record.status.as_str()
        )));
    }
    let hosting = workspace_hosting(&workspace);
    let Some(host) = hosting.host().filter(|host| hosted_session(&record, host)) else {
        return Err(Stop::Invalid(format!(
            "session {} is not hosted by tmux (it runs in the terminal of the command that started it)",
            record.id
        )));
    };
    let ended = follow(&workspace, host, &record.id, None, signals)?;
    report_end(&ended, terminal)
}

/// Prints how following ended: the end as a start prints it (exit 1 unless `completed`),
/// or where the session goes on.
pub fn report_end(ended: &FollowEnd, terminal: &crate::terminal::Terminal) -> Result<(), Stop> {
    match ended {
        FollowEnd::Detached(id) => {
            if !terminal.quiet {
                crate::print_stderr(&format!(
                    "session {id} keeps running in tmux; `acompose people attach {id}` reattaches, `acompose people stop {id}` ends it\n"
                ));
            }
            Ok(())
        }
        FollowEnd::Ended(record) => {
            let exit = record.exit_code.map_or_else(String::new, |code| format!(" (exit code {code})"));
            let message = format!("session {} {}{exit}\n", record.id, record.status.as_str());
            if record.status == Status::Completed {
                if !terminal.quiet {
                    crate::print_stderr(&message);
                }
                Ok(())
            } else {
                crate::print_stderr(&message);
                Err(Stop::Reported)
            }
        }
    }
}
