//! The state every request shares: the workspace, the token, the port (for the
//! Host/Origin check) and the lock that makes writes one at a time. It holds no cache of
//! the workspace: every request reads the files afresh, as the cli does.

use std::sync::Mutex;

use acompose_host::people::Workspace;

pub struct AppState {
    pub workspace: Workspace,
    pub token: String,
    pub port: u16,
    /// Held across read-check-write so two requests never interleave on one file.
    pub writes: Mutex<()>,
}

impl AppState {
    pub fn new(workspace: Workspace, token: String, port: u16) -> Self {
        Self { workspace, token, port, writes: Mutex::new(()) }
    }
}
