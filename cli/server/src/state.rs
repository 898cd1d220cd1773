//! The state every request shares: the workspace, the token, the port (for the
//! Host/Origin check), the `PATH` runners are looked up on, the lock that makes writes
//! one at a time, the sessions this server started and the signal that it is stopping.
//! It holds no cache of the workspace: every request reads the files afresh, as the cli
//! does.

use std::ffi::OsString;
use std::sync::Mutex;

use acompose_driver::people::Workspace;
use acompose_driver::people::as_role::{RosterPlace, roster_roles};
use tokio::sync::watch;

use crate::live::LiveSessions;

pub struct AppState {
    pub workspace: Workspace,
    pub token: String,
    pub port: u16,
    pub path_variable: Option<OsString>,
    /// Held across read-check-write so two requests never interleave on one file.
    pub writes: Mutex<()>,
    pub live: LiveSessions,
    /// Becomes true when the server stops; open terminals close on it.
    pub stopping: watch::Receiver<bool>,
    /// The versions of what the page shows, published while a page listens.
    pub changes: watch::Sender<Versions>,
    /// The acompose home whose composition the page shows, when one can be named.
    pub home: Option<acompose_driver::home::Home>,
    /// Where the roster People bind roles against is; `None`: no role binds.
    pub roster: Option<RosterPlace>,
    /// Whether sessions run in the workspace's tmux server (and outlive the server).
    pub hosting: acompose_driver::people::tmux::Hosting,
}

/// The versions of what the page shows (`changes`); empty until first read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Versions {
    pub sessions: String,
    pub people: String,
}

impl AppState {
    /// The roster's role slugs, read afresh; `None` without a roster.
    pub fn roster_roles(&self) -> Option<Vec<String>> {
        self.roster.as_ref().and_then(|place| roster_roles(place).ok())
    }
}
