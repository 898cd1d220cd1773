//! The swarm and resume routes: the review of a whole run, its start (each role's PTY
//! held here, so the page opens, reopens and stops each role's terminal), the recorded
//! runs, one run with its sessions, stopping a run, and resuming a session's
//! conversation. Every rule is the host's (`people::swarm`, `people::sessions`).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};

use acompose_driver::people::document;
use acompose_driver::people::resolve::Assignment;
use acompose_driver::people::session_runner::{LaunchOptions, TerminalSize};
use acompose_driver::people::sessions::{DEFAULT_GRACE, Reviewed, SystemClock, review_resume, stop_session};
use acompose_driver::people::swarm::{
    Choices, RunRecord, SwarmOptions, SwarmReview, list_runs, review_swarm, show_run, start_swarm_with,
};

use crate::error::ApiError;
use crate::people_api::{Body, blocking, envelope, json_response, uploaded_recipe};
use crate::sessions_api::{abandon, checked_session_id, no_session, session_entry, start_held};
use crate::state::AppState;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SwarmRequest {
    recipe_file_name: String,
    recipe: String,
    #[serde(default)]
    assignments: Vec<AssignmentRequest>,
    project_id: String,
    #[serde(default)]
    runner: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    task: Option<String>,
    #[serde(default)]
    acknowledge_unsupported: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AssignmentRequest {
    role: String,
    person_id: String,
}

const SWARM_MESSAGE: &str = "a swarm request is {recipe_file_name, recipe, assignments, project_id, runner, model, task, acknowledge_unsupported}";

fn review(state: &AppState, request: &SwarmRequest) -> Result<SwarmReview, ApiError> {
    let (label, recipe) = uploaded_recipe(&request.recipe_file_name, &request.recipe)?;
    let options = SwarmOptions {
        project_id: request.project_id.clone(),
        assignments: request
            .assignments
            .iter()
            .map(|assignment| Assignment { role: assignment.role.clone(), person_id: assignment.person_id.clone() })
            .collect(),
        choices: Choices {
            runner: request.runner.clone().filter(|runner| !runner.is_empty()),
            model: request.model.clone().filter(|model| !model.trim().is_empty()),
            ..Choices::default()
        },
        task: request.task.clone(),
        roster: state.roster.clone(),
    };
    Ok(review_swarm(&state.workspace, &recipe, &label, &options, state.path_variable.as_deref(), &SystemClock)?)
}

fn review_document(review: &SwarmReview) -> Value {
    let roles: Vec<Value> = review
        .roles
        .iter()
        .map(|(planned, reviewed)| {
            let mut start: Value =
                serde_json::from_slice(&acompose_driver::people::session_report::review_json(&reviewed.review))
                    .unwrap_or_default();
            // Each limit this role's runner cannot enforce, explained, for the page's
            // acknowledgement.
            let details: Vec<Value> = reviewed
                .review
                .unsupported
                .iter()
                .map(|limit| json!({"field": limit.field(), "explanation": limit.explanation()}))
                .collect();
            if let Some(object) = start.as_object_mut() {
                object.insert("unsupported_details".to_owned(), json!(details));
            }
            json!({
                "role": planned.resolved.role,
                "person_id": planned.resolved.person_id,
                "rule": planned.resolved.rule.code(),
                "runner": planned.runner,
                "runner_from": planned.runner_from.label(),
                "model": planned.model,
                "model_from": planned.model_from.label(),
                "review": start,
            })
        })
        .collect();
    json!({
        "format": "acompose.people-swarm-review.v1",
        "run_id": review.run_id,
        "recipe": review.recipe,
        "project_id": review.project_id,
        "roles": roles,
    })
}

/// Reviews a whole run; starts nothing (a role's runtime home is prepared).
pub async fn review_run(State(state): State<Arc<AppState>>, body: Body) -> Result<Response, ApiError> {
    let request: SwarmRequest = envelope(body, SWARM_MESSAGE)?;
    blocking(state, move |state| {
        let review = review(state, &request)?;
        Ok(json_response(StatusCode::OK, document::json_bytes(&review_document(&review))))
    })
    .await
}

/// Reviews again and starts one session per role, each PTY held by this server.
pub async fn start_run(State(state): State<Arc<AppState>>, body: Body) -> Result<Response, ApiError> {
    let request: SwarmRequest = envelope(body, SWARM_MESSAGE)?;
    blocking(state, move |state| {
        let review = review(state, &request)?;
        let launch = LaunchOptions {
            acknowledge_unsupported: request.acknowledge_unsupported,
            size: TerminalSize::default(),
            grace: DEFAULT_GRACE,
        };
        let start = |reviewed: &Reviewed| start_held(state, reviewed, &launch);
        let (run, _) =
            start_swarm_with(&state.workspace, &review, &SystemClock, start, |id: String| abandon(state, &id))?;
        Ok(json_response(StatusCode::CREATED, document::json_bytes(&run_document(state, &run)?)))
    })
    .await
}

/// A run with each role's session entry (status, `live`, `attachable`).
fn run_document(state: &AppState, run: &RunRecord) -> Result<Value, ApiError> {
    let mut roles = Vec::new();
    for role in &run.roles {
        let session = session_entry(state, &role.session_id)?;
        roles.push(json!({
            "role": role.role, "person_id": role.person_id, "rule": role.rule, "runner": role.runner,
            "model": role.model, "session_id": role.session_id, "session": session,
        }));
    }
    Ok(json!({
        "format": "acompose.people-run.v1", "id": run.id, "recipe": run.recipe,
        "project_id": run.project_id, "started_at": run.started_at, "roles": roles,
    }))
}

pub async fn list_run(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    blocking(state, |state| {
        let runs = list_runs(&state.workspace)?;
        let body = json!({"format": "acompose.people-runs.v1", "runs": runs});
        Ok(json_response(StatusCode::OK, document::json_bytes(&body)))
    })
    .await
}

fn checked_run(state: &AppState, id: &str) -> Result<RunRecord, ApiError> {
    if !acompose_driver::people::session::is_session_id(id) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid-run-id",
            "a run id is lowercase letters, digits and `-`",
        )
        .at("/id"));
    }
    show_run(&state.workspace, id, &SystemClock)
        .map(|(run, _)| run)
        .map_err(|_| ApiError::new(StatusCode::NOT_FOUND, "no-such-run", "there is no run with this id"))
}

pub async fn show(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    blocking(state, move |state| {
        let run = checked_run(state, &id)?;
        Ok(json_response(StatusCode::OK, document::json_bytes(&run_document(state, &run)?)))
    })
    .await
}

/// Stops every session of a run: those this server holds through their handles, any
/// other through the host's `stop`.
pub async fn stop(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    blocking(state, move |state| {
        let run = checked_run(state, &id)?;
        let held: Vec<_> = run.roles.iter().filter_map(|role| state.live.get(&role.session_id)).collect();
        for live in &held {
            live.stop(DEFAULT_GRACE * 3);
        }
        for role in run.roles.iter().filter(|role| state.live.get(&role.session_id).is_none()) {
            stop_session(&state.workspace, &role.session_id, &SystemClock, DEFAULT_GRACE)?;
        }
        Ok(json_response(StatusCode::OK, document::json_bytes(&run_document(state, &run)?)))
    })
    .await
}

/// Starts a new session on an ended session's conversation, its PTY held here.
pub async fn resume(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    blocking(state, move |state| {
        let id = checked_session_id(&id)?;
        session_entry(state, id)?.ok_or_else(no_session)?;
        let reviewed = review_resume(&state.workspace, id, state.roster.clone(), state.path_variable.as_deref())?;
        let launch = LaunchOptions { acknowledge_unsupported: true, ..LaunchOptions::default() };
        let (_, new) = start_held(state, &reviewed, &launch)?;
        let entry = session_entry(state, &new)?.unwrap_or_else(|| json!({"id": new}));
        Ok(json_response(StatusCode::CREATED, document::json_bytes(&entry)))
    })
    .await
}
