//! The routes that spare a user hand-made files: link a project folder
//! (`POST /projects`), list and create swarm recipes (`GET`/`POST /recipes`). The
//! driver places the files (`people::authoring`); the People core checks every recipe.

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};

use acompose_driver::people::authoring;
use acompose_driver::people::{RECIPE_SPEC, document};

use crate::error::ApiError;
use crate::people_api::{Body, blocking, envelope, json_response};
use crate::state::AppState;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectRequest {
    /// The project id: the name of the link under `projects/`.
    id: String,
    /// The project's folder, a full path on this machine.
    folder: String,
}

/// Links `projects/<id>` to a folder; answers with the project as `GET /projects` lists it.
pub async fn link_project(State(state): State<Arc<AppState>>, body: Body) -> Result<Response, ApiError> {
    let request: ProjectRequest = envelope(body, "a project request is {id, folder}")?;
    blocking(state, move |state| {
        let _writing = state.writes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let project = authoring::link_project(&state.workspace, &request.id, &PathBuf::from(&request.folder))
            .map_err(|stop| ApiError::from(stop).at("/folder"))?;
        let body = json!({"id": project.id, "folder": project.folder.to_string_lossy()});
        Ok(json_response(StatusCode::CREATED, document::json_bytes(&body)))
    })
    .await
}

/// The recipes of `recipes/`: each with its file, its text (to preview or start it) and
/// its roles, or the findings that make it unreadable.
pub async fn recipes(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    blocking(state, |state| {
        let (recipes, refused) = authoring::recipes(&state.workspace)?;
        let entries: Vec<Value> = recipes
            .iter()
            .map(|stored| match &stored.parsed {
                Ok(recipe) => json!({
                    "file": stored.file,
                    "text": String::from_utf8_lossy(&stored.text),
                    "roles": recipe.roles.iter().map(|slot| json!({"role": slot.role, "persona": slot.persona})).collect::<Vec<_>>(),
                    "findings": [],
                }),
                Err(findings) => json!({
                    "file": stored.file,
                    "text": Value::Null,
                    "roles": [],
                    "findings": findings_json(findings),
                }),
            })
            .collect();
        let body = json!({"format": "acompose.recipes.v1", "recipes": entries, "refused": findings_json(&refused)});
        Ok(json_response(StatusCode::OK, document::json_bytes(&body)))
    })
    .await
}

fn findings_json(findings: &[acompose_driver::engine::Diagnostic]) -> Vec<Value> {
    findings
        .iter()
        .map(|finding| {
            json!({
                "code": finding.code,
                "message": finding.message,
                "file": finding.file,
                "pointer": finding.pointer,
                "line": finding.position.map(|position| position.line),
            })
        })
        .collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecipeRequest {
    /// The recipe's name: the file is `recipes/<name>.json`.
    name: String,
    roles: Vec<SlotRequest>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SlotRequest {
    role: String,
    #[serde(default)]
    persona: Option<String>,
}

/// Writes a new recipe in the format `acompose people resolve --recipe` reads.
pub async fn create_recipe(State(state): State<Arc<AppState>>, body: Body) -> Result<Response, ApiError> {
    let request: RecipeRequest = envelope(body, "a recipe request is {name, roles: [{role, persona}]}")?;
    let roles: Vec<Value> = request
        .roles
        .iter()
        .map(|slot| match slot.persona.as_deref().map(str::trim).filter(|persona| !persona.is_empty()) {
            Some(persona) => json!({"role": slot.role, "persona": persona}),
            None => json!({"role": slot.role}),
        })
        .collect();
    let bytes = document::json_bytes(&json!({"spec": RECIPE_SPEC, "roles": roles}));
    blocking(state, move |state| {
        let _writing = state.writes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let path = authoring::save_recipe(&state.workspace, &request.name, &bytes)?;
        let body = json!({"file": path, "text": String::from_utf8_lossy(&bytes)});
        Ok(json_response(StatusCode::CREATED, document::json_bytes(&body)))
    })
    .await
}
