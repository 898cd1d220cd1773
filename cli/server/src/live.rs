//! The sessions this server started and whose PTY it holds: the terminal's recent output
//! (so a reopened view shows it), the fan-out of new output to every open terminal view,
//! the input writer, the resizer and the stopper. The session itself (the record, the
//! process group, the end) is the host's `session_runner`; this module only keeps its
//! handles while the PTY lives.
//!
//! Invariant: an entry exists from the start until the host's `wait` has written the
//! final record; the final record is then kept so a view opened late still learns how it
//! ended.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use acompose_driver::people::hosted::Hosted;
use acompose_driver::people::session::SessionRecord;
use acompose_driver::people::session_runner::{Resizer, SessionHandle, Stopper, TerminalSize};
use acompose_driver::people::sessions::{DEFAULT_GRACE, SystemClock, list_sessions, stop_session};
use acompose_driver::people::tmux::{FollowReader, Followed, Follower, Host};
use acompose_driver::people::{Stop, Workspace};
use tokio::sync::broadcast;

/// The most output kept for a view that opens later, in bytes.
pub const SCROLLBACK_BYTES: usize = 256 * 1024;

/// What an open terminal view receives.
#[derive(Clone, Debug)]
pub enum Event {
    Output(Arc<[u8]>),
    /// The session ended with this status.
    Ended(&'static str),
}

struct Screen {
    scrollback: Vec<u8>,
    ended: Option<SessionRecord>,
    /// A tmux follower that was detached (the session goes on).
    detached: bool,
}

/// How this server reaches a session's terminal.
enum Control {
    /// The server holds the runner's PTY (no tmux): stopping the server stops it.
    Pty { writer: Mutex<Option<Box<dyn Write + Send>>>, resizer: Resizer, stopper: Stopper },
    /// The session is hosted by tmux and followed by a control-mode client: stopping the
    /// server only detaches it.
    Tmux { follower: Mutex<Follower>, workspace: Workspace, id: String },
}

/// One session whose terminal this server holds: its own PTY, or a tmux client on it.
pub struct Live {
    screen: Mutex<Screen>,
    finished: Condvar,
    events: broadcast::Sender<Event>,
    control: Control,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Live {
    /// Takes over a started session: a thread copies its output, another waits for its
    /// end (which writes the final record).
    pub fn adopt(handle: SessionHandle) -> Result<Arc<Live>, Stop> {
        let reader = handle.reader()?;
        let writer = handle.take_writer()?;
        let (events, _) = broadcast::channel(256);
        let live = Arc::new(Live {
            screen: Mutex::new(Screen { scrollback: Vec::new(), ended: None, detached: false }),
            finished: Condvar::new(),
            events,
            control: Control::Pty {
                writer: Mutex::new(Some(writer)),
                resizer: handle.resizer(),
                stopper: handle.stopper(),
            },
            threads: Mutex::new(Vec::new()),
        });
        let copier = {
            let live = Arc::clone(&live);
            std::thread::Builder::new().name("acompose-pty-read".to_owned()).spawn(move || live.copy_output(reader))
        };
        let waiter = {
            let live = Arc::clone(&live);
            std::thread::Builder::new().name("acompose-pty-wait".to_owned()).spawn(move || live.wait_for_end(handle))
        };
        let mut threads = live.threads.lock().unwrap_or_else(PoisonError::into_inner);
        match (copier, waiter) {
            // The copier is not joined: a process that escaped the group may hold the
            // PTY open, and stopping the server must not wait for it.
            (Ok(_copier), Ok(waiter)) => threads.push(waiter),
            // Without its threads the session cannot be watched or ended: stop it.
            (_, waiter) => {
                live.stop_now();
                threads.extend(waiter);
            }
        }
        drop(threads);
        Ok(live)
    }

    /// Follows a session hosted by tmux with a control-mode client: the pane's history
    /// first when the session was started elsewhere or before this server (`hosted` is
    /// `None`), then its output. A start's `hosted` is released once the client is
    /// attached, so its first byte is seen. The entry ends when the tmux session does
    /// (its record is then read) or when the server detaches.
    pub fn follow(host: &Host, workspace: Workspace, id: &str, hosted: Option<Hosted>) -> Result<Arc<Live>, Stop> {
        let mut follower = host.follow(id)?;
        let history = if hosted.is_none() { follower.catch_up() } else { Vec::new() };
        let reader = follower.take_reader();
        let (events, _) = broadcast::channel(256);
        let live = Arc::new(Live {
            screen: Mutex::new(Screen { scrollback: history, ended: None, detached: false }),
            finished: Condvar::new(),
            events,
            control: Control::Tmux { follower: Mutex::new(follower), workspace, id: id.to_owned() },
            threads: Mutex::new(Vec::new()),
        });
        let id = id.to_owned();
        let copier = {
            let live = Arc::clone(&live);
            std::thread::Builder::new()
                .name("acompose-tmux-follow".to_owned())
                .spawn(move || live.follow_output(reader, hosted, &id))
        };
        match copier {
            Ok(copier) => live.threads.lock().unwrap_or_else(PoisonError::into_inner).push(copier),
            Err(_) => live.detach(),
        }
        Ok(live)
    }

    fn follow_output(&self, reader: Option<FollowReader>, mut hosted: Option<Hosted>, id: &str) {
        if let Some(mut reader) = reader {
            loop {
                match reader.next_event() {
                    Followed::Output(bytes) => self.output(&bytes),
                    Followed::Attached => {
                        if let Some(hosted) = hosted.take() {
                            hosted.release();
                        }
                    }
                    Followed::Exit => break,
                }
            }
        }
        drop(hosted);
        let Control::Tmux { follower, workspace, .. } = &self.control else {
            return;
        };
        follower.lock().unwrap_or_else(PoisonError::into_inner).wait();
        let record = list_sessions(workspace, &SystemClock)
            .ok()
            .and_then(|listing| listing.records.into_iter().find(|record| record.id == id));
        let mut screen = self.screen.lock().unwrap_or_else(PoisonError::into_inner);
        // A session that goes on (the server detached) is not ended: the next server
        // follows it again.
        if let Some(record) = record.filter(|record| record.status.is_terminal()) {
            let _ = self.events.send(Event::Ended(record.status.as_str()));
            screen.ended = Some(record);
        } else {
            screen.detached = true;
        }
        drop(screen);
        self.finished.notify_all();
    }

    fn copy_output(&self, mut reader: Box<dyn Read + Send>) {
        let mut buffer = vec![0_u8; 16 * 1024];
        loop {
            match reader.read(&mut buffer) {
                Ok(0) | Err(_) => return,
                Ok(count) => self.output(&buffer[..count]),
            }
        }
    }

    fn output(&self, bytes: &[u8]) {
        let chunk: Arc<[u8]> = Arc::from(bytes);
        let mut screen = self.screen.lock().unwrap_or_else(PoisonError::into_inner);
        screen.scrollback.extend_from_slice(&chunk);
        let excess = screen.scrollback.len().saturating_sub(SCROLLBACK_BYTES);
        screen.scrollback.drain(..excess);
        // No open view is not an error.
        let _ = self.events.send(Event::Output(chunk));
    }

    /// Whether the session's runner lives in tmux (stopping the server leaves it).
    pub fn is_hosted(&self) -> bool {
        matches!(self.control, Control::Tmux { .. })
    }

    /// Detaches a tmux follower (the session goes on); nothing for a PTY.
    fn detach(&self) {
        if let Control::Tmux { follower, .. } = &self.control {
            follower.lock().unwrap_or_else(PoisonError::into_inner).kill();
        }
    }

    /// Asks a session whose PTY this server holds to stop.
    fn stop_now(&self) {
        if let Control::Pty { stopper, .. } = &self.control {
            stopper.stop();
        }
    }

    fn wait_for_end(&self, handle: SessionHandle) {
        let started = handle.record().clone();
        let record = match handle.wait() {
            Ok(finished) => finished.record,
            // The host could not write the final record; the listing's reconciliation
            // will mark it. The view learns that the PTY is gone.
            Err(_) => started,
        };
        // The writer is useless once the runner is gone.
        if let Control::Pty { writer, .. } = &self.control {
            writer.lock().unwrap_or_else(PoisonError::into_inner).take();
        }
        let mut screen = self.screen.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = self.events.send(Event::Ended(record.status.as_str()));
        screen.ended = Some(record);
        drop(screen);
        self.finished.notify_all();
    }

    /// The output so far and a subscription to what follows, taken together so no byte
    /// is missed or repeated; `None` for the subscription once the session has ended.
    pub fn open(&self) -> (Vec<u8>, Option<&'static str>, broadcast::Receiver<Event>) {
        let screen = self.screen.lock().unwrap_or_else(PoisonError::into_inner);
        let ended = screen.ended.as_ref().map(|record| record.status.as_str());
        (screen.scrollback.clone(), ended, self.events.subscribe())
    }

    /// Whether the terminal is still followed: the session has not ended and, for a
    /// tmux follower, it is still attached.
    pub fn is_alive(&self) -> bool {
        let screen = self.screen.lock().unwrap_or_else(PoisonError::into_inner);
        screen.ended.is_none() && !screen.detached
    }

    /// Types into the terminal. Input after the end is dropped.
    pub fn input(&self, bytes: &[u8]) {
        match &self.control {
            Control::Pty { writer, .. } => {
                if let Some(writer) = writer.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
                    let _ = writer.write_all(bytes).and_then(|()| writer.flush());
                }
            }
            Control::Tmux { follower, .. } => {
                let _ = follower.lock().unwrap_or_else(PoisonError::into_inner).input(bytes);
            }
        }
    }

    pub fn resize(&self, size: TerminalSize) {
        if !self.is_alive() {
            return;
        }
        match &self.control {
            Control::Pty { resizer, .. } => {
                let _ = resizer.resize(size);
            }
            Control::Tmux { follower, .. } => {
                let _ = follower.lock().unwrap_or_else(PoisonError::into_inner).resize(size.cols, size.rows);
            }
        }
    }

    /// Asks the session to stop and waits (bounded) for its final record. A hosted
    /// session is stopped as `people stop` does it; its follower then sees it end.
    pub fn stop(&self, limit: Duration) -> Option<SessionRecord> {
        match &self.control {
            Control::Pty { stopper, .. } => stopper.stop(),
            Control::Tmux { workspace, id, .. } => {
                // Its follower sees the tmux session end and reads the final record.
                let _ = stop_session(workspace, id, &SystemClock, DEFAULT_GRACE);
            }
        }
        let screen = self.screen.lock().unwrap_or_else(PoisonError::into_inner);
        let (screen, _) = self
            .finished
            .wait_timeout_while(screen, limit, |screen| screen.ended.is_none() && !screen.detached)
            .unwrap_or_else(PoisonError::into_inner);
        screen.ended.clone()
    }

    fn join(&self) {
        let threads: Vec<JoinHandle<()>> =
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        for thread in threads {
            let _ = thread.join();
        }
    }
}

/// The sessions this server started, by id.
#[derive(Default)]
pub struct LiveSessions {
    sessions: Mutex<BTreeMap<String, Arc<Live>>>,
}

impl LiveSessions {
    pub fn insert(&self, id: String, live: Arc<Live>) {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).insert(id, live);
    }

    pub fn get(&self, id: &str) -> Option<Arc<Live>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }

    /// Ends every session whose PTY this server holds and waits for their records;
    /// detaches from the sessions tmux hosts, which go on (a restarted server follows
    /// them again). Sessions started elsewhere are not in here and are left alone.
    pub fn stop_all(&self, limit: Duration) {
        let all: Vec<Arc<Live>> =
            self.sessions.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
        for live in all.iter().filter(|live| live.is_alive()) {
            live.stop_now();
            live.detach();
        }
        for live in &all {
            if !live.is_hosted() {
                live.stop(limit);
            }
            live.join();
        }
    }

    /// Forgets an entry that no longer follows anything, so it can be followed anew.
    pub fn remove_detached(&self, id: &str) {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if sessions.get(id).is_some_and(|live| live.is_hosted() && !live.is_alive()) {
            sessions.remove(id);
        }
    }
}
