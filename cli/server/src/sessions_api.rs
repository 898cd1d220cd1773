//! The session routes: projects, runners with what `PATH` holds, the start review, the
//! start, the listing, one session, stop, and the terminal WebSocket of a session this
//! server started. Every rule is the host's (`people::sessions`, `session_runner`) and
//! the engine's; the routes only carry requests and reports.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use acompose_driver::people as host;
use acompose_driver::people::document;
use acompose_driver::people::hosted::{hosted_session, start_hosted};
use acompose_driver::people::runner::PromptIntake;
use acompose_driver::people::session::{SessionRecord, Status, is_session_id};
use acompose_driver::people::session_report::{review_json, sessions_json};
use acompose_driver::people::session_runner::{LaunchOptions, TerminalSize, start_session};
use acompose_driver::people::sessions::{
    DEFAULT_GRACE, Reviewed, StartOptions, SystemClock, discover_runners, list_sessions, review_session, stop_session,
};
use acompose_driver::people::tmux::Hosting;

use crate::error::ApiError;
use crate::guard::TOKEN_PROTOCOL_PREFIX;
use crate::live::{Event, Live};
use crate::people_api::{Body, blocking, envelope, json_response};
use crate::state::AppState;

/// The largest message a terminal view may send (input or resize), in bytes.
pub const MAX_TERMINAL_MESSAGE_BYTES: usize = 64 * 1024;

pub async fn projects(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    blocking(state, |state| {
        let projects: Vec<Value> = host::projects(&state.workspace)?
            .iter()
            .map(|project| json!({"id": project.id, "folder": project.folder.to_string_lossy()}))
            .collect();
        Ok(json_response(
            StatusCode::OK,
            document::json_bytes(&json!({"format": "acompose.projects.v1", "projects": projects})),
        ))
    })
    .await
}

/// The runner table, each row with whether its binary is on `PATH`.
pub async fn runners(State(state): State<Arc<AppState>>) -> Response {
    let rows: Vec<Value> = discover_runners(state.path_variable.as_deref())
        .iter()
        .map(|found| {
            let prompt = match found.runner.prompt {
                PromptIntake::Positional => "positional",
                PromptIntake::Flag(_) => "flag",
                PromptIntake::CopyOnly => "copy-only",
            };
            json!({
                "name": found.runner.name,
                "binary": found.runner.binary,
                "takes_model": found.runner.model_flag.is_some(),
                "prompt": prompt,
                "available": found.path.is_some(),
            })
        })
        .collect();
    json_response(StatusCode::OK, document::json_bytes(&json!({"format": "acompose.runners.v1", "runners": rows})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartRequest {
    person_id: String,
    project_id: String,
    runner: String,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    task: Option<String>,
    #[serde(default)]
    acknowledge_unsupported: bool,
    #[serde(default)]
    cols: Option<u16>,
    #[serde(default)]
    rows: Option<u16>,
    /// The conversation id the review showed, so the runner gets that one.
    #[serde(default)]
    conversation: Option<String>,
}

const START_MESSAGE: &str = "a start request is {person_id, project_id, runner, model, task, acknowledge_unsupported, cols, rows, conversation}";

fn reviewed(state: &AppState, request: &StartRequest) -> Result<Reviewed, ApiError> {
    let options = StartOptions {
        person_id: request.person_id.clone(),
        project_id: request.project_id.clone(),
        runner: request.runner.clone(),
        model: request.model.clone().filter(|model| !model.trim().is_empty()),
        task: request.task.clone(),
        roster: state.roster.clone(),
        conversation: request.conversation.clone(),
    };
    review_session(&state.workspace, &options, state.path_variable.as_deref()).map_err(ApiError::from)
}

/// The review as `people start --dry-run --json` prints it, with the command line and
/// each unsupported limit's explanation added for the page.
fn review_document(reviewed: &Reviewed, hosting: &Hosting) -> Value {
    let review = &reviewed.review;
    let mut document: Value = serde_json::from_slice(&review_json(review)).unwrap_or_default();
    if let Some(object) = document.as_object_mut() {
        object.insert("command_line".to_owned(), json!(review.command_line()));
        let details: Vec<Value> = review
            .unsupported
            .iter()
            .map(|limit| json!({"field": limit.field(), "explanation": limit.explanation()}))
            .collect();
        object.insert("unsupported_details".to_owned(), json!(details));
        object.insert("host".to_owned(), json!(hosting.host().map(|_| "tmux")));
        object.insert("host_detail".to_owned(), json!(hosting.review_line()));
    }
    document
}

/// Reviews a start; writes and starts nothing.
pub async fn review(State(state): State<Arc<AppState>>, body: Body) -> Result<Response, ApiError> {
    let request: StartRequest = envelope(body, START_MESSAGE)?;
    blocking(state, move |state| {
        let reviewed = reviewed(state, &request)?;
        Ok(json_response(StatusCode::OK, document::json_bytes(&review_document(&reviewed, &state.hosting))))
    })
    .await
}

/// Reviews again and starts the session in a PTY this server holds.
pub async fn start(State(state): State<Arc<AppState>>, body: Body) -> Result<Response, ApiError> {
    let request: StartRequest = envelope(body, START_MESSAGE)?;
    blocking(state, move |state| {
        let reviewed = reviewed(state, &request)?;
        let size = TerminalSize {
            cols: request.cols.unwrap_or(80).clamp(20, 500),
            rows: request.rows.unwrap_or(24).clamp(5, 300),
        };
        let launch =
            LaunchOptions { acknowledge_unsupported: request.acknowledge_unsupported, size, grace: DEFAULT_GRACE };
        let (record, id) = start_held(state, &reviewed, &launch)?;
        drop(record);
        let entry = session_entry(state, &id)?.unwrap_or_else(|| json!({"id": id}));
        Ok(json_response(StatusCode::CREATED, document::json_bytes(&entry)))
    })
    .await
}

/// Starts a reviewed session and keeps its terminal: in the workspace's tmux server when
/// there is one (followed by this server, outliving it), else in a PTY this server holds.
/// Returns the `running` record and the id.
pub(crate) fn start_held(
    state: &AppState,
    reviewed: &Reviewed,
    launch: &LaunchOptions,
) -> Result<(SessionRecord, String), host::Stop> {
    match state.hosting.host() {
        Some(host) => {
            let hosted = start_hosted(&state.workspace, reviewed, launch, Arc::new(SystemClock), host)?;
            let (record, id) = (hosted.record().clone(), hosted.id().to_owned());
            let live = Live::follow(host, state.workspace.clone(), &id, Some(hosted))?;
            state.live.insert(id.clone(), live);
            Ok((record, id))
        }
        None => {
            let handle = start_session(&state.workspace, reviewed, launch, Arc::new(SystemClock))?;
            let (record, id) = (handle.record().clone(), handle.id().to_owned());
            state.live.insert(id.clone(), Live::adopt(handle)?);
            Ok((record, id))
        }
    }
}

/// Stops a session [`start_held`] started (a later role of its run could not start).
pub(crate) fn abandon(state: &AppState, id: &str) {
    match state.live.get(id) {
        Some(live) => {
            live.stop(DEFAULT_GRACE * 3);
        }
        None => {
            let _ = stop_session(&state.workspace, id, &SystemClock, DEFAULT_GRACE);
        }
    }
}

/// The listing as `people sessions --json` prints it, each entry with `live` (its
/// runner is running) and `attachable` (this server holds its terminal).
pub(crate) fn listing(state: &AppState) -> Result<Value, ApiError> {
    let listing = list_sessions(&state.workspace, &SystemClock)?;
    let mut document: Value =
        serde_json::from_slice(&sessions_json(&listing.records, &listing.interruptions, listing.findings.len()))
            .unwrap_or_default();
    if let Some(entries) = document.get_mut("sessions").and_then(Value::as_array_mut) {
        for (entry, record) in entries.iter_mut().zip(&listing.records) {
            let live = record.status == Status::Running;
            // A running record tmux hosts was just reconciled against the tmux server.
            let hosted = record.links.host.is_some() && state.hosting.host().is_some();
            let attachable = live && (hosted || state.live.get(&record.id).is_some_and(|held| held.is_alive()));
            if let Some(object) = entry.as_object_mut() {
                object.insert("live".to_owned(), json!(live));
                object.insert("attachable".to_owned(), json!(attachable));
            }
        }
    }
    Ok(document)
}

pub(crate) fn session_entry(state: &AppState, id: &str) -> Result<Option<Value>, ApiError> {
    let document = listing(state)?;
    Ok(document
        .get("sessions")
        .and_then(Value::as_array)
        .and_then(|entries| entries.iter().find(|entry| entry["id"] == id).cloned()))
}

pub async fn list(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    blocking(state, |state| Ok(json_response(StatusCode::OK, document::json_bytes(&listing(state)?)))).await
}

pub(crate) fn checked_session_id(id: &str) -> Result<&str, ApiError> {
    if is_session_id(id) {
        Ok(id)
    } else {
        Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid-session-id",
            "a session id is lowercase letters, digits and `-`",
        )
        .at("/id"))
    }
}

pub(crate) fn no_session() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "no-such-session", "there is no session with this id")
}

pub async fn show(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    blocking(state, move |state| {
        let id = checked_session_id(&id)?;
        let entry = session_entry(state, id)?.ok_or_else(no_session)?;
        Ok(json_response(StatusCode::OK, document::json_bytes(&entry)))
    })
    .await
}

/// Stops a session: one this server started through its handle (the final record is
/// the host's), any other through the host's `stop`.
pub async fn stop(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    blocking(state, move |state| {
        let id = checked_session_id(&id)?;
        session_entry(state, id)?.ok_or_else(no_session)?;
        match state.live.get(id) {
            Some(live) => {
                // The host waits at most twice the grace period for the runner.
                live.stop(DEFAULT_GRACE * 3);
            }
            None => {
                stop_session(&state.workspace, id, &SystemClock, DEFAULT_GRACE).map_err(ApiError::from)?;
            }
        }
        let entry = session_entry(state, id)?.ok_or_else(no_session)?;
        Ok(json_response(StatusCode::OK, document::json_bytes(&entry)))
    })
    .await
}

/// What a terminal view sends.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
enum ViewMessage {
    Input { data: String },
    Resize { cols: u16, rows: u16 },
}

/// The terminal of a session this server started: its output so far, then live output,
/// input and resize; the socket closes when the session ends.
pub async fn terminal(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    upgrade: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    let id = checked_session_id(&id)?.to_owned();
    let held = state.live.get(&id).filter(|live| live.is_alive() || !live.is_hosted());
    let live = match held {
        Some(live) => live,
        None => {
            let state = Arc::clone(&state);
            let id = id.clone();
            tokio::task::spawn_blocking(move || follow_hosted(&state, &id)).await.map_err(|_| no_terminal())??
        }
    };
    let protocol = format!("{TOKEN_PROTOCOL_PREFIX}{}", state.token);
    let stopping = state.stopping.clone();
    Ok(upgrade
        .protocols([protocol])
        .max_message_size(MAX_TERMINAL_MESSAGE_BYTES)
        .on_upgrade(move |socket| serve_terminal(socket, live, stopping))
        .into_response())
}

fn no_terminal() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "no-terminal", "this server does not hold the terminal of this session")
}

/// Follows a running session tmux hosts (one started before this server, or by
/// `people start`): its history, then its output.
fn follow_hosted(state: &AppState, id: &str) -> Result<Arc<Live>, ApiError> {
    let host = state.hosting.host().ok_or_else(no_terminal)?;
    let listing = list_sessions(&state.workspace, &SystemClock)?;
    let record = listing.records.into_iter().find(|record| record.id == id).ok_or_else(no_terminal)?;
    if !hosted_session(&record, host) {
        return Err(no_terminal());
    }
    state.live.remove_detached(id);
    let live = Live::follow(host, state.workspace.clone(), id, None)?;
    state.live.insert(id.to_owned(), Arc::clone(&live));
    Ok(live)
}

async fn serve_terminal(mut socket: WebSocket, live: Arc<Live>, mut stopping: tokio::sync::watch::Receiver<bool>) {
    let (scrollback, ended, mut events) = live.open();
    if !scrollback.is_empty() && socket.send(Message::Binary(Bytes::from(scrollback))).await.is_err() {
        return;
    }
    if let Some(status) = ended {
        let _ = socket.send(Message::Text(json!({"type": "exit", "status": status}).to_string().into())).await;
        let _ = socket.send(Message::Close(None)).await;
        return;
    }
    if *stopping.borrow() {
        return;
    }
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(Event::Output(bytes)) => {
                    if socket.send(Message::Binary(Bytes::copy_from_slice(&bytes))).await.is_err() {
                        return;
                    }
                }
                Ok(Event::Ended(status)) => {
                    let _ = socket.send(Message::Text(json!({"type": "exit", "status": status}).to_string().into())).await;
                    let _ = socket.send(Message::Close(None)).await;
                    return;
                }
                // A slow view skips what it missed; the scrollback has it on reopen.
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            },
            message = socket.recv() => match message {
                Some(Ok(Message::Text(text))) => handle_view_message(&live, text.as_str()).await,
                Some(Ok(Message::Binary(bytes))) => {
                    let live = Arc::clone(&live);
                    let _ = tokio::task::spawn_blocking(move || live.input(&bytes)).await;
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return,
            },
            _ = stopping.changed() => {
                let _ = socket.send(Message::Close(None)).await;
                return;
            }
        }
    }
}

async fn handle_view_message(live: &Arc<Live>, text: &str) {
    let Ok(message) = serde_json::from_str::<ViewMessage>(text) else {
        return;
    };
    let live = Arc::clone(live);
    let _ = tokio::task::spawn_blocking(move || match message {
        ViewMessage::Input { data } => live.input(data.as_bytes()),
        ViewMessage::Resize { cols, rows } => {
            live.resize(TerminalSize { cols: cols.clamp(2, 1000), rows: rows.clamp(1, 500) });
        }
    })
    .await;
}

/// How long stopping the server waits for the sessions it started.
pub const SHUTDOWN_WAIT: Duration = Duration::from_secs(15);
