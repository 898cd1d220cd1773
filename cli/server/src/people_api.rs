//! The People routes: list, show, create, update, archive, restore, the reviewed import
//! (preview, then a separate save), the bindings and the resolution preview. Each handler reads the request, calls the same host and engine
//! functions as `acompose people …`, and returns the engine's own JSON reports.
//!
//! Disk work runs on tokio's blocking pool; every write holds the state's write lock
//! from its read to its rename, so concurrent requests never interleave on one file.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use acompose_driver::engine::Diagnostic;
use acompose_driver::people as host;
use acompose_driver::people::hire::{self, Overrides};
use acompose_driver::people::recipe::{self, Syntax};
use acompose_driver::people::resolve::{self as resolution, Assignment};
use acompose_driver::people::workspace::{self, BINDINGS_PATH, PEOPLE_DIRECTORY};
use acompose_driver::people::{Person, document, finding, is_slug, json as people_json, printable, report};

use crate::error::{ApiError, MAX_REQUEST_BYTES};
use crate::state::AppState;
use crate::versions;

pub(crate) type Body = Result<Bytes, BytesRejection>;

/// Runs disk work off the async threads.
pub(crate) async fn blocking<F>(state: Arc<AppState>, work: F) -> Result<Response, ApiError>
where
    F: FnOnce(&AppState) -> Result<Response, ApiError> + Send + 'static,
{
    tokio::task::spawn_blocking(move || work(&state)).await.map_err(|_| {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "the request could not be completed")
    })?
}

/// Holds the write lock; a poisoned lock only means an earlier request panicked, and
/// every write is atomic, so the files are still whole.
fn write_lock(state: &AppState) -> std::sync::MutexGuard<'_, ()> {
    state.writes.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(crate) fn json_response(status: StatusCode, bytes: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}

/// The body, or `body-too-large` / `invalid-request` without echoing anything.
fn body_bytes(body: Body) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body-too-large",
                format!("the request body is larger than {MAX_REQUEST_BYTES} bytes"),
            )
        } else {
            ApiError::invalid_request("the request body could not be read")
        }
    })
}

/// A request envelope, parsed strictly: unknown and duplicate fields are refused.
pub(crate) fn envelope<T: serde::de::DeserializeOwned>(body: Body, message: &'static str) -> Result<T, ApiError> {
    let bytes = body_bytes(body)?;
    serde_json::from_slice(&bytes).map_err(|_| ApiError::invalid_request(message))
}

fn checked_id(id: &str) -> Result<&str, ApiError> {
    if is_slug(id) {
        Ok(id)
    } else {
        Err(ApiError::new(StatusCode::BAD_REQUEST, "invalid-id", "a Person id is a lowercase slug").at("/id"))
    }
}

fn existing(state: &AppState, id: &str) -> Result<Person, ApiError> {
    if state.workspace.person_file(id)?.is_none() {
        return Err(ApiError::not_found_person());
    }
    Ok(host::existing_person(&state.workspace, id)?)
}

/// A Person, with the version of its file as it is on disk now in `ETag` (a file written
/// by hand need not be in the canonical form the answer shows).
fn person_response(state: &AppState, status: StatusCode, person: &Person) -> Result<Response, ApiError> {
    let version = host::person_version(&state.workspace, &person.id)?;
    Ok(versions::tagged(json_response(status, document::person_bytes(person)), &version))
}

/// Refuses a write to a Person whose file is no longer at the version the request names.
fn check_person_version(state: &AppState, id: &str, expected: Option<&str>) -> Result<(), ApiError> {
    let bytes = state.workspace.person_file(id)?;
    let version = host::version(bytes.as_deref());
    versions::check(expected, &version, || {
        bytes.as_deref().and_then(|bytes| serde_json::from_slice(bytes).ok()).unwrap_or(serde_json::Value::Null)
    })
}

pub async fn list(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    blocking(state, |state| {
        let validation = workspace::load_roster(&state.workspace.collect()?);
        Ok(json_response(
            StatusCode::OK,
            report::list_json(&validation.roster.people, &validation.findings, state.roster_roles().as_deref()),
        ))
    })
    .await
}

pub async fn show(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    blocking(state, move |state| {
        let person = existing(state, checked_id(&id)?)?;
        person_response(state, StatusCode::OK, &person)
    })
    .await
}

/// The id a submitted person@1 document names, read with the hardened parser so a
/// duplicate key or an oversized body is refused before anything else.
fn submitted_id(bytes: &[u8]) -> Result<String, ApiError> {
    let tree =
        people_json::parse(bytes).map_err(|error| ApiError::findings(vec![finding::syntax("request", error)]))?;
    match tree.value.get("id").and_then(serde_json::Value::as_str) {
        Some(id) if is_slug(id) => Ok(id.to_owned()),
        _ => Err(ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid-id", "`id` must be a lowercase slug")
            .at("/properties/id/pattern")),
    }
}

/// Checks a submitted document exactly as a file `people/<id>.json` would be checked.
fn submitted_person(id: &str, bytes: &[u8]) -> Result<Person, ApiError> {
    workspace::check_person(PEOPLE_DIRECTORY, &format!("{id}.json"), bytes).map_err(ApiError::findings)
}

pub async fn create(State(state): State<Arc<AppState>>, body: Body) -> Result<Response, ApiError> {
    let bytes = body_bytes(body)?;
    blocking(state, move |state| {
        let id = submitted_id(&bytes)?;
        let person = submitted_person(&id, &bytes)?;
        let _writing = write_lock(state);
        if state.workspace.person_file(&id)?.is_some() {
            return Err(person_exists());
        }
        host::create_person(&state.workspace, &person)?;
        person_response(state, StatusCode::CREATED, &person)
    })
    .await
}

fn person_exists() -> ApiError {
    ApiError::new(StatusCode::CONFLICT, "person-exists", "a Person with this id already exists").at("/id")
}

/// Replaces a Person; the request names the version it edits in `If-Match`.
pub async fn update(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = body_bytes(body)?;
    let expected = versions::required(&headers)?;
    blocking(state, move |state| {
        let id = checked_id(&id)?;
        let _writing = write_lock(state);
        existing(state, id)?;
        check_person_version(state, id, Some(&expected))?;
        let person = submitted_person(id, &bytes)?;
        host::save_person(&state.workspace, &person)?;
        person_response(state, StatusCode::OK, &person)
    })
    .await
}

/// Archives or restores; a request that names a version in `If-Match` is refused when the
/// file has changed since.
async fn set_archived(
    state: Arc<AppState>,
    id: String,
    headers: &HeaderMap,
    archived: bool,
) -> Result<Response, ApiError> {
    let expected = versions::requested(headers);
    blocking(state, move |state| {
        let id = checked_id(&id)?;
        let _writing = write_lock(state);
        let mut person = existing(state, id)?;
        check_person_version(state, id, expected.as_deref())?;
        if person.archived != archived {
            person.archived = archived;
            host::save_person(&state.workspace, &person)?;
        }
        person_response(state, StatusCode::OK, &person)
    })
    .await
}

pub async fn archive(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    set_archived(state, id, &headers, true).await
}

pub async fn restore(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    set_archived(state, id, &headers, false).await
}

/// An uploaded hire file and the reviewer's answers to what it leaves open.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ImportRequest {
    /// The uploaded file's name, shown in the review (its last path segment only).
    #[serde(default)]
    file_name: Option<String>,
    /// The file's text, byte for byte as uploaded.
    content: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    goal: Option<String>,
    #[serde(default)]
    max_tokens: Option<u64>,
}

/// A file name from the request, reduced to its last segment and made printable.
pub(crate) fn upload_label(file_name: Option<&str>, default: &str) -> String {
    let name = file_name.and_then(|name| name.rsplit(['/', '\\']).next()).filter(|name| !name.is_empty());
    printable(name.unwrap_or(default))
}

fn import_review(request: &ImportRequest) -> Result<(String, hire::Review), ApiError> {
    if let Some(id) = &request.id {
        checked_id(id)?;
    }
    let label = upload_label(request.file_name.as_deref(), "hire.json");
    let overrides = Overrides {
        id: request.id.clone(),
        name: request.name.clone(),
        role: request.role.clone(),
        goal: request.goal.clone(),
        max_tokens: request.max_tokens,
    };
    let review = hire::review(&label, request.content.as_bytes(), &overrides).map_err(ApiError::findings)?;
    Ok((label, review))
}

const IMPORT_MESSAGE: &str = "an import request is {file_name, content, id, name, role, goal, max_tokens}";

/// Reviews a hire file; writes nothing. An id that names an existing Person is flagged
/// here, before Save, as a blocking item of the review (`id_exists`).
pub async fn import_preview(State(state): State<Arc<AppState>>, body: Body) -> Result<Response, ApiError> {
    let request: ImportRequest = envelope(body, IMPORT_MESSAGE)?;
    let (label, review) = import_review(&request)?;
    blocking(state, move |state| {
        let mut document: serde_json::Value =
            serde_json::from_slice(&report::review_json(&label, &review, None)).unwrap_or_default();
        let id = review.person.as_ref().map(|person| person.id.clone()).or_else(|| mapped_id(&document));
        let taken = match &id {
            Some(id) if is_slug(id) => state.workspace.person_file(id)?.is_some(),
            _ => false,
        };
        if let Some(object) = document.as_object_mut() {
            object.insert("id_exists".to_owned(), json!(taken));
            if taken {
                object.insert("ready_to_save".to_owned(), json!(false));
                if let Some(items) = object.get_mut("needs_review").and_then(serde_json::Value::as_array_mut) {
                    items.push(json!({"field": "id", "message": ID_TAKEN, "blocking": true}));
                }
            }
        }
        Ok(json_response(StatusCode::OK, document::json_bytes(&document)))
    })
    .await
}

const ID_TAKEN: &str = "names a Person who already exists; choose another id (Save would be refused)";

/// The id the review mapped, when it could not make a Person yet.
fn mapped_id(document: &serde_json::Value) -> Option<String> {
    document.get("mapped")?.as_array()?.iter().find(|row| row["target"] == "id")?["value"].as_str().map(str::to_owned)
}

/// Reviews the same file again and writes the reviewed Person as a new file.
pub async fn import_save(State(state): State<Arc<AppState>>, body: Body) -> Result<Response, ApiError> {
    let request: ImportRequest = envelope(body, IMPORT_MESSAGE)?;
    let (label, review) = import_review(&request)?;
    let Some(person) = review.person.clone() else {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "review-incomplete",
            "the review has items that block saving; answer them first (nothing was written)",
        ));
    };
    blocking(state, move |state| {
        let _writing = write_lock(state);
        if state.workspace.person_file(&person.id)?.is_some() {
            return Err(person_exists());
        }
        let path = host::create_person(&state.workspace, &person)?;
        Ok(json_response(StatusCode::CREATED, report::review_json(&label, &review, Some(&path))))
    })
    .await
}

fn bindings_document(state: &AppState) -> Result<Response, ApiError> {
    let files = state.workspace.collect()?;
    let version = host::version(files.bindings.as_deref());
    let validation = workspace::load_roster(&files);
    let findings: Vec<Diagnostic> =
        validation.findings.into_iter().filter(|finding| finding.file.as_deref() == Some(BINDINGS_PATH)).collect();
    if findings.iter().any(|finding| finding.is_error() && finding.code != workspace::MISSING_BINDING_CODE) {
        return Err(ApiError::findings(findings));
    }
    let roles: serde_json::Map<String, serde_json::Value> = validation
        .roster
        .bindings
        .roles
        .iter()
        .map(|(role, binding)| {
            (role.clone(), json!({"person_id": binding.person_id, "preferred_people": binding.preferred_people}))
        })
        .collect();
    let missing: Vec<_> = findings
        .iter()
        .map(|finding| json!({"code": finding.code, "pointer": finding.pointer, "line": finding.position.map(|position| position.line)}))
        .collect();
    let body = json!({
        "format": "acompose.people-bindings.v1",
        "version": version,
        "present": validation.roster.has_bindings,
        "bindings": {"spec": acompose_driver::people::BINDINGS_SPEC, "roles": roles},
        "findings": missing,
    });
    Ok(versions::tagged(json_response(StatusCode::OK, document::json_bytes(&body)), &version))
}

pub async fn bindings(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    blocking(state, bindings_document).await
}

/// Replaces `people/bindings.yaml` with a people-bindings@1 document, checked exactly as
/// `people validate` checks the file (a JSON document is also YAML), every referenced
/// Person required to exist. The request names the version it edits in `If-Match`
/// (`absent` when there was no file).
pub async fn put_bindings(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = body_bytes(body)?;
    let expected = versions::required(&headers)?;
    blocking(state, move |state| {
        let _writing = write_lock(state);
        let version = host::bindings_version(&state.workspace)?;
        versions::check(Some(&expected), &version, || serde_json::Value::Null)?;
        host::replace_bindings(&state.workspace, &bytes)?;
        bindings_document(state)
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolveRequest {
    /// The recipe's file name; its extension chooses JSON or YAML.
    recipe_file_name: String,
    /// The recipe's text.
    recipe: String,
    #[serde(default)]
    assignments: Vec<AssignmentRequest>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AssignmentRequest {
    role: String,
    person_id: String,
}

fn refused(rejections: &[resolution::Rejection]) -> ApiError {
    let first = rejections.first();
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        first.map_or("assignment-refused", |rejection| rejection.code),
        first.map_or_else(|| "an assignment was refused".to_owned(), |rejection| rejection.message.clone()),
    )
    .at("/assignments")
}

/// Parses a recipe the page sent (`recipe_file_name` tells its syntax): its label and it.
pub fn uploaded_recipe(file_name: &str, text: &str) -> Result<(String, recipe::Recipe), ApiError> {
    let label = upload_label(Some(file_name), "recipe.json");
    let Some(syntax) = Syntax::from_file_name(&label) else {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "recipe-file-name",
            "a recipe is a `.json`, `.yaml` or `.yml` file",
        )
        .at("/recipe_file_name"));
    };
    let recipe = recipe::parse(&label, syntax, text.as_bytes()).map_err(ApiError::findings)?;
    Ok((label, recipe))
}

/// Previews which Person fills each recipe role; writes and starts nothing.
pub async fn resolve(State(state): State<Arc<AppState>>, body: Body) -> Result<Response, ApiError> {
    let request: ResolveRequest = envelope(body, "a resolve request is {recipe_file_name, recipe, assignments}")?;
    let (label, recipe) = uploaded_recipe(&request.recipe_file_name, &request.recipe)?;
    let assignments: Vec<Assignment> = request
        .assignments
        .into_iter()
        .map(|assignment| Assignment { role: assignment.role, person_id: assignment.person_id })
        .collect();
    blocking(state, move |state| {
        let validation = host::roster_for_resolution(&state.workspace).map_err(ApiError::from)?;
        let roster = &validation.roster;
        let resolve =
            |assignments: &[Assignment]| resolution::resolve(&recipe, &roster.people, &roster.bindings, assignments);
        match resolve(&assignments) {
            Ok(resolved) => Ok(json_response(StatusCode::OK, report::resolution_json(&label, &resolved, &[]))),
            // One refused assignment does not hide the table: the rest is resolved without
            // the refused ones, and the refusals come back beside it.
            Err(rejections) => {
                let kept: Vec<Assignment> = assignments
                    .iter()
                    .filter(|assignment| resolve(std::slice::from_ref(assignment)).is_ok())
                    .cloned()
                    .collect();
                let resolved = resolve(&kept).or_else(|_| resolve(&[])).map_err(|_| refused(&rejections))?;
                let mut document: serde_json::Value =
                    serde_json::from_slice(&report::resolution_json(&label, &resolved, &rejections))
                        .unwrap_or_default();
                let dropped: Vec<_> = assignments
                    .iter()
                    .filter(|assignment| !kept.contains(assignment))
                    .map(|assignment| json!({"role": assignment.role, "person_id": assignment.person_id}))
                    .collect();
                if let Some(object) = document.as_object_mut() {
                    object.insert("refused_assignments".to_owned(), json!(dropped));
                }
                Ok(json_response(StatusCode::OK, document::json_bytes(&document)))
            }
        }
    })
    .await
}
