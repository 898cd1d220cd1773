//! `GET /api/v1/world`: each project of the workspace as a place, and in it each Person
//! one of whose sessions' runners lives now (single and swarm sessions alike), with the
//! Person's name, avatar, role, the role's colour, and each live session's runner,
//! status and start. Presence comes from the session listing alone (the host's
//! reconciliation: a record whose process is gone is not running), never from
//! configuration; a session in a project no longer linked is shown in a place of its own
//! marked unlinked. The page redraws it on the events socket's `sessions` and `people`
//! versions, which change whenever a session starts or ends.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use acompose_driver::people as host;
use acompose_driver::people::{document, workspace};

use crate::composition_api::home_roster_roles;
use crate::error::ApiError;
use crate::people_api::{blocking, json_response};
use crate::sessions_api;
use crate::state::AppState;

pub async fn world(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    blocking(state, |state| Ok(json_response(StatusCode::OK, document::json_bytes(&world_document(state)?)))).await
}

/// A live session as the World shows it under its Person.
fn session_of(entry: &Value) -> Value {
    json!({
        "id": entry["id"],
        "runner": entry["provider"],
        "model": entry["model"],
        "status": entry["status"],
        "started_at": entry["started_at"],
        "run": entry["run"],
    })
}

fn world_document(state: &AppState) -> Result<Value, ApiError> {
    let listing = sessions_api::listing(state)?;
    let validation = workspace::load_roster(&state.workspace.collect()?);
    let people: BTreeMap<&str, _> =
        validation.roster.people.iter().map(|person| (person.id.as_str(), person)).collect();
    let colours: BTreeMap<String, Value> = state
        .home
        .as_deref()
        .map(|home| home_roster_roles(home).0)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|role| Some((role["role"].as_str()?.to_owned(), role["favorite_color"].clone())))
        .collect();
    // Place → Person → that Person's live sessions there, in the listing's order.
    let mut present: BTreeMap<String, BTreeMap<String, Vec<&Value>>> = BTreeMap::new();
    for entry in listing["sessions"].as_array().into_iter().flatten().filter(|entry| entry["live"] == true) {
        let (Some(project), Some(person)) = (entry["project_id"].as_str(), entry["person_id"].as_str()) else {
            continue;
        };
        present.entry(project.to_owned()).or_default().entry(person.to_owned()).or_default().push(entry);
    }
    let person_entry = |person_id: &str, sessions: &[&Value]| {
        let first = sessions.first().copied().unwrap_or(&Value::Null);
        let configured = people.get(person_id);
        let role = configured.map_or_else(|| first["role"].as_str().unwrap_or_default().to_owned(), |p| p.role.clone());
        json!({
            "person_id": person_id,
            "name": configured.map_or_else(|| first["person"].clone(), |person| json!(person.name)),
            "role": role,
            "role_color": colours.get(&role).cloned().unwrap_or(Value::Null),
            "avatar": configured.and_then(|person| person.avatar.as_ref()).map(|avatar| json!({"character": avatar.character, "accent": avatar.accent})),
            "ephemeral": first["ephemeral"],
            "sessions": sessions.iter().map(|entry| session_of(entry)).collect::<Vec<_>>(),
        })
    };
    let mut places = Vec::new();
    for project in host::projects(&state.workspace)? {
        let here = present.remove(&project.id).unwrap_or_default();
        let people: Vec<Value> = here.iter().map(|(id, sessions)| person_entry(id, sessions)).collect();
        places.push(json!({"project_id": project.id, "linked": true, "present": people}));
    }
    for (project, here) in present {
        let people: Vec<Value> = here.iter().map(|(id, sessions)| person_entry(id, sessions)).collect();
        places.push(json!({"project_id": project, "linked": false, "present": people}));
    }
    Ok(json!({"format": "acompose.world.v1", "places": places}))
}
