//! Server push: the page learns that sessions or People changed, wherever the change came
//! from (this page, another tab, the cli, a runner killed from outside), without asking.
//!
//! One watcher reads what the page shows (the session listing, with the host's
//! reconciliation of records whose process is gone, and the People listing with the
//! bindings and projects) every [`INTERVAL`] while at least one page listens, and
//! publishes a version of each; `/api/v1/events` sends every new pair to the page as
//! `{"type": "versions", "sessions": …, "people": …}`. The page reads the data itself
//! through the ordinary routes: nothing of a file travels on this socket.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::sync::watch;

use acompose_driver::people as host;
use acompose_driver::people::{report, workspace};

use crate::error::ApiError;
use crate::guard::TOKEN_PROTOCOL_PREFIX;
use crate::sessions_api;
use crate::state::{AppState, Versions};

/// How often the watcher looks while a page listens: a change shows within twice this.
pub const INTERVAL: Duration = Duration::from_millis(400);

/// Reads what the page shows and returns its versions; `None` when it cannot be read now
/// (the next round tries again).
fn read(state: &AppState) -> Option<Versions> {
    let sessions = sessions_api::listing(state).ok()?;
    let files = state.workspace.collect().ok()?;
    let validation = workspace::load_roster(&files);
    let mut people = report::list_json(&validation.roster.people, &validation.findings, None);
    people.extend_from_slice(files.bindings.as_deref().unwrap_or_default());
    for project in host::projects(&state.workspace).ok()? {
        people.extend_from_slice(project.id.as_bytes());
        people.push(b'\n');
    }
    Some(Versions {
        sessions: host::version(Some(&serde_json::to_vec(&sessions).unwrap_or_default())),
        people: host::version(Some(&people)),
    })
}

/// The watcher: runs on the server's runtime until it stops.
pub async fn watch_workspace(state: Arc<AppState>, mut stopping: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(INTERVAL) => {}
            _ = stopping.changed() => return,
        }
        if *stopping.borrow() {
            return;
        }
        if state.changes.receiver_count() == 0 {
            continue;
        }
        let reader = Arc::clone(&state);
        if let Ok(Some(versions)) = tokio::task::spawn_blocking(move || read(&reader)).await {
            state.changes.send_if_modified(|current| {
                let changed = *current != versions;
                *current = versions;
                changed
            });
        }
    }
}

/// `GET /api/v1/events`: a WebSocket (the token as a subprotocol, as for terminals) that
/// carries the versions whenever they change. The page sends nothing on it.
pub async fn events(State(state): State<Arc<AppState>>, upgrade: WebSocketUpgrade) -> Result<Response, ApiError> {
    let protocol = format!("{TOKEN_PROTOCOL_PREFIX}{}", state.token);
    let versions = state.changes.subscribe();
    let stopping = state.stopping.clone();
    Ok(upgrade
        .protocols([protocol])
        .max_message_size(1024)
        .on_upgrade(move |socket| serve_events(socket, versions, stopping))
        .into_response())
}

async fn serve_events(
    mut socket: WebSocket,
    mut versions: watch::Receiver<Versions>,
    mut stopping: watch::Receiver<bool>,
) {
    loop {
        let current = versions.borrow_and_update().clone();
        if !current.sessions.is_empty() {
            let message = json!({"type": "versions", "sessions": current.sessions, "people": current.people});
            if socket.send(Message::Text(message.to_string().into())).await.is_err() {
                return;
            }
        }
        tokio::select! {
            changed = versions.changed() => if changed.is_err() { return },
            message = socket.recv() => match message {
                // What the page might send is ignored; a closed socket ends the loop.
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return,
            },
            _ = stopping.changed() => {
                let _ = socket.send(Message::Close(None)).await;
                return;
            }
        }
    }
}
