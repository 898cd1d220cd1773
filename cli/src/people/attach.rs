//! Attaches the user's terminal to a started session. When stdin is a terminal it goes
//! to raw mode (restored when the session ends, however it ends), its size is passed on
//! at the start and on every SIGWINCH, and keys go to the runner — Ctrl-C included, as
//! runners use it themselves. Otherwise input and output are forwarded as bytes. SIGINT,
//! SIGTERM and SIGHUP sent to acompose itself stop the session (`stopped`).

use std::io::{IsTerminal as _, Read as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use acompose_driver::people::Stop;
use acompose_driver::people::session_runner::{Finished, Resizer, SessionHandle, Stopper, TerminalSize};
use rustix::termios::{OptionalActions, Termios, tcgetattr, tcgetwinsize, tcsetattr};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGWINCH};

/// The size of the user's terminal, if stdout or stdin is one.
pub fn terminal_size() -> Option<TerminalSize> {
    let size = tcgetwinsize(std::io::stdout()).or_else(|_| tcgetwinsize(std::io::stdin())).ok()?;
    (size.ws_row > 0 && size.ws_col > 0).then_some(TerminalSize { rows: size.ws_row, cols: size.ws_col })
}

/// Raw mode on stdin until dropped.
struct RawMode {
    saved: Termios,
}

impl RawMode {
    fn enter() -> Option<Self> {
        let saved = tcgetattr(std::io::stdin()).ok()?;
        let mut raw = saved.clone();
        raw.make_raw();
        tcsetattr(std::io::stdin(), OptionalActions::Now, &raw).ok()?;
        Some(Self { saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &self.saved);
    }
}

/// Runs the session with the terminal attached and returns how it ended.
pub fn attach(handle: SessionHandle) -> Result<Finished, Stop> {
    attach_as(handle, false)
}

/// Runs a hosted session with the tmux pane as its terminal: SIGHUP means the pane is
/// gone (tmux ended), and the session ends `interrupted`; SIGINT and SIGTERM stop it.
pub fn attach_hosted(handle: SessionHandle) -> Result<Finished, Stop> {
    attach_as(handle, true)
}

fn attach_as(handle: SessionHandle, hosted: bool) -> Result<Finished, Stop> {
    let interactive = std::io::stdin().is_terminal();
    let raw = if interactive { RawMode::enter() } else { None };
    let output_done = forward_output(handle.reader()?);
    forward_input(handle.take_writer()?);
    let ended = Arc::new(AtomicBool::new(false));
    let watcher = watch_signals(handle.stopper(), handle.resizer(), interactive, hosted, Arc::clone(&ended));
    let finished = handle.wait();
    ended.store(true, Ordering::SeqCst);
    // The output ends when the terminal closes; a process that left the group but kept
    // the terminal open is not waited for.
    let _ = output_done.recv_timeout(Duration::from_secs(2));
    let _ = watcher.join();
    drop(raw);
    finished
}

/// Copies the terminal's output to stdout until it closes; signals the end on the channel.
fn forward_output(mut reader: Box<dyn std::io::Read + Send>) -> mpsc::Receiver<()> {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 8192];
        let mut stdout = std::io::stdout();
        while let Ok(count) = reader.read(&mut buffer) {
            let Some(chunk) = buffer.get(..count).filter(|chunk| !chunk.is_empty()) else {
                break;
            };
            if stdout.write_all(chunk).and_then(|()| stdout.flush()).is_err() {
                break;
            }
        }
        let _ = done.send(());
    });
    finished
}

/// Copies stdin to the terminal's input. When stdin ends, the runner's input ends too.
fn forward_input(mut writer: Box<dyn std::io::Write + Send>) {
    std::thread::spawn(move || {
        let mut buffer = [0u8; 1024];
        let mut stdin = std::io::stdin();
        while let Ok(count) = stdin.read(&mut buffer) {
            let Some(chunk) = buffer.get(..count).filter(|chunk| !chunk.is_empty()) else {
                break;
            };
            if writer.write_all(chunk).and_then(|()| writer.flush()).is_err() {
                return;
            }
        }
    });
}

/// Turns SIGINT, SIGTERM and SIGHUP into a stop (SIGHUP of a `hosted` session: its host
/// is gone) and SIGWINCH into a resize, until `ended`.
fn watch_signals(
    stopper: Stopper,
    resizer: Resizer,
    interactive: bool,
    hosted: bool,
    ended: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let stop = Arc::new(AtomicBool::new(false));
    let host_gone = Arc::new(AtomicBool::new(false));
    let resize = Arc::new(AtomicBool::new(false));
    let mut registered = Vec::new();
    for signal in [SIGINT, SIGTERM] {
        registered.extend(signal_hook::flag::register(signal, Arc::clone(&stop)).ok());
    }
    let hangup = if hosted { &host_gone } else { &stop };
    registered.extend(signal_hook::flag::register(SIGHUP, Arc::clone(hangup)).ok());
    registered.extend(signal_hook::flag::register(SIGWINCH, Arc::clone(&resize)).ok());
    if interactive && let Some(size) = terminal_size() {
        let _ = resizer.resize(size);
    }
    std::thread::spawn(move || {
        let mut stopped = false;
        while !ended.load(Ordering::SeqCst) {
            if host_gone.load(Ordering::SeqCst) && !stopped {
                stopped = true;
                stopper.host_gone();
            }
            if stop.load(Ordering::SeqCst) && !stopped {
                stopped = true;
                stopper.stop();
            }
            if resize.swap(false, Ordering::SeqCst)
                && let Some(size) = terminal_size()
            {
                let _ = resizer.resize(size);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        for id in registered {
            signal_hook::low_level::unregister(id);
        }
    })
}
