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

use acompose_driver::people::Stop;
use acompose_driver::people::session::SessionRecord;
use acompose_driver::people::session_runner::{Resizer, SessionHandle, Stopper, TerminalSize};
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
}

/// One session whose PTY this server holds.
pub struct Live {
    screen: Mutex<Screen>,
    finished: Condvar,
    events: broadcast::Sender<Event>,
    writer: Mutex<Option<Box<dyn Write + Send>>>,
    resizer: Resizer,
    stopper: Stopper,
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
            screen: Mutex::new(Screen { scrollback: Vec::new(), ended: None }),
            finished: Condvar::new(),
            events,
            writer: Mutex::new(Some(writer)),
            resizer: handle.resizer(),
            stopper: handle.stopper(),
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
                live.stopper.stop();
                threads.extend(waiter);
            }
        }
        drop(threads);
        Ok(live)
    }

    fn copy_output(&self, mut reader: Box<dyn Read + Send>) {
        let mut buffer = vec![0_u8; 16 * 1024];
        loop {
            match reader.read(&mut buffer) {
                Ok(0) | Err(_) => return,
                Ok(count) => {
                    let chunk: Arc<[u8]> = Arc::from(&buffer[..count]);
                    let mut screen = self.screen.lock().unwrap_or_else(PoisonError::into_inner);
                    screen.scrollback.extend_from_slice(&chunk);
                    let excess = screen.scrollback.len().saturating_sub(SCROLLBACK_BYTES);
                    screen.scrollback.drain(..excess);
                    // No open view is not an error.
                    let _ = self.events.send(Event::Output(chunk));
                }
            }
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
        self.writer.lock().unwrap_or_else(PoisonError::into_inner).take();
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

    pub fn is_alive(&self) -> bool {
        self.screen.lock().unwrap_or_else(PoisonError::into_inner).ended.is_none()
    }

    /// Types into the terminal. Input after the end is dropped.
    pub fn input(&self, bytes: &[u8]) {
        if let Some(writer) = self.writer.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            let _ = writer.write_all(bytes).and_then(|()| writer.flush());
        }
    }

    pub fn resize(&self, size: TerminalSize) {
        if self.is_alive() {
            let _ = self.resizer.resize(size);
        }
    }

    /// Asks the session to stop and waits (bounded) for its final record.
    pub fn stop(&self, limit: Duration) -> Option<SessionRecord> {
        self.stopper.stop();
        let screen = self.screen.lock().unwrap_or_else(PoisonError::into_inner);
        let (screen, _) = self
            .finished
            .wait_timeout_while(screen, limit, |screen| screen.ended.is_none())
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

    /// Ends every session this server started that still runs, and waits for their
    /// records. Sessions started elsewhere are not in here and are left alone.
    pub fn stop_all(&self, limit: Duration) {
        let all: Vec<Arc<Live>> =
            self.sessions.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
        for live in all.iter().filter(|live| live.is_alive()) {
            live.stopper.stop();
        }
        for live in &all {
            live.stop(limit);
            live.join();
        }
    }
}
