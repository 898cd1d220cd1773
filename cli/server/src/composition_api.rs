//! Composition, read-only: the home's bundles (each with `describe`'s document: the
//! role's identity, colours, personalities, seats and tier, the provider table, the
//! context budget and the listing warnings), `describe --why` on one bundle, the
//! registered projections and the store's size. Every answer comes from the same driver
//! function the cli command uses (`bundle_name::list`, `bundle::read_provenance` with
//! `engine::describe::describe_json`, `why::why`, `projections::list`,
//! `store::Store::usage`); nothing is composed, projected or written here.

use std::path::Path;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::http::Uri;
use axum::response::Response;
use serde_json::{Value, json};

use acompose_driver::Sources;
use acompose_driver::compose::bundle::read_provenance;
use acompose_driver::compose::store;
use acompose_driver::compose::why::{WhyFailure, why};
use acompose_driver::convergence::bundle_name;
use acompose_driver::delivery::projections;
use acompose_driver::engine::describe::{self, WhyError};
use acompose_driver::engine::snapshot::to_json_bytes;
use acompose_driver::home::settings;
use acompose_driver::people::document;

use crate::error::ApiError;
use crate::people_api::{blocking, json_response};
use crate::state::AppState;

fn home(state: &AppState) -> Result<&acompose_driver::home::Home, ApiError> {
    state.home.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "no-home",
            "no acompose home could be named; start the server with `--home DIR` or set ACOMPOSE_HOME",
        )
    })
}

/// The roster the home's settings select (the embedded one when they name none), as
/// `roster show --json` loads it, cut to what the page shows of each role: name,
/// purpose, identity, favourite colour, personalities with their colours, seats. Empty,
/// with the reason, when it cannot be loaded.
pub(crate) fn home_roster_roles(home: &Path) -> (Vec<Value>, Option<String>) {
    let flags = settings::Flags { home: Some(home.to_path_buf()), ..settings::Flags::default() };
    let model = settings::resolve(&flags)
        .and_then(|settings| settings.selection(false))
        .and_then(|selection| Sources::default().load_model(&selection));
    // A roster that cannot be loaded does not fail the answer: the problem is named in it
    // and the bundles are listed all the same.
    let model = match model {
        Ok(valid) => valid.model,
        Err(error) => return (Vec::new(), Some(error.to_string())),
    };
    let person: Value =
        serde_json::from_slice(&acompose_driver::engine::snapshot::person_json(&model)).unwrap_or_default();
    let colour_of = |slug: &str| person["personalities"][slug]["color"].clone();
    let roles = person["role_order"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|slug| {
            let role = &person["roles"][slug];
            let personalities: Vec<Value> = role["personalities"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|personality| json!({"slug": personality, "color": colour_of(personality)}))
                .collect();
            let seats: Vec<Value> = role["seats"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|seat| json!({"harness": seat["harness"], "name": seat["name"], "tier": seat["tier"]}))
                .collect();
            json!({
                "role": slug,
                "display_name": role["display_name"],
                "purpose": role["purpose"],
                "favorite_color": role["favorite_color"],
                "identity": role["identity"],
                "personalities": personalities,
                "seats": seats,
            })
        })
        .collect();
    (roles, None)
}

/// `GET /api/v1/home`: the roster's roles (with or without bundles), the home's bundles,
/// projections and store, as `roster show`, `bundle list`, `projections` and `doctor`
/// show them.
pub async fn overview(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    blocking(state, |state| {
        let home = home(state)?;
        let bundles: Vec<Value> = bundle_name::list(home)
            .iter()
            .map(|listed| {
                let seconds = listed
                    .modified
                    .and_then(|modified| modified.duration_since(UNIX_EPOCH).ok())
                    .map(|since| since.as_secs());
                json!({
                    "id": listed.id,
                    "role": listed.role,
                    "place": listed.place,
                    "current": listed.current,
                    "modified_unix": seconds,
                    "bytes": listed.bytes,
                    "projections": listed.projections.len(),
                })
            })
            .collect();
        let projections: Vec<Value> = projections::list(home)
            .iter()
            .map(|listed| {
                json!({
                    "target": listed.target.to_string_lossy(),
                    "role": listed.role,
                    "layout": listed.layout,
                    "bundle": listed.bundle,
                    "state": listed.state.name(),
                })
            })
            .collect();
        let usage = store::Store::of_home(home).usage();
        let (roles, roster_problem) = home_roster_roles(home);
        let body = json!({
            "format": "acompose.home.v1",
            "exists": home.is_dir(),
            "roles": roles,
            "roster_problem": roster_problem,
            "bundles": bundles,
            "projections": projections,
            "store": {"entries": usage.entries, "bytes": usage.bytes},
        });
        Ok(json_response(StatusCode::OK, document::json_bytes(&body)))
    })
    .await
}

/// A bundle as the page names it: a full id of the home's bundles (hex digits only).
fn bundle_folder(state: &AppState, id: &str) -> Result<std::path::PathBuf, ApiError> {
    let home = home(state)?;
    let plain = (4..=64).contains(&id.len()) && id.bytes().all(|byte| byte.is_ascii_hexdigit());
    if !plain {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "invalid-bundle", "a bundle id is hexadecimal digits"));
    }
    bundle_name::resolve(Some(home), Path::new(id))
        .map_err(|_| ApiError::new(StatusCode::NOT_FOUND, "no-such-bundle", "the home has no bundle with this id"))
}

/// `GET /api/v1/bundles/{id}`: `describe --json` of one bundle.
pub async fn describe_bundle(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Response, ApiError> {
    blocking(state, move |state| {
        let folder = bundle_folder(state, &id)?;
        let (id, manifest, trace) = read_provenance(&folder).map_err(|_| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unreadable-bundle",
                "this bundle's manifest or trace cannot be read; `acompose verify` tells why",
            )
        })?;
        Ok(json_response(StatusCode::OK, describe::describe_json(&id, &manifest, &trace)))
    })
    .await
}

/// The `item` of a query string (`item=skill%3Aname`), percent-decoded; at most 512
/// bytes, UTF-8.
fn query_item(uri: &Uri) -> Option<String> {
    let value = uri.query()?.split('&').find_map(|pair| pair.strip_prefix("item="))?;
    if value.len() > 512 {
        return None;
    }
    let bytes = value.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(index + 1..index + 3)?).ok()?;
                decoded.push(u8::from_str_radix(hex, 16).ok()?);
                index += 3;
            }
            b'+' => {
                decoded.push(b' ');
                index += 1;
            }
            byte => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8(decoded).ok()
}

/// `GET /api/v1/bundles/{id}/why?item=KIND:NAME`: `describe --why` through the driver's
/// one path. An unknown item answers 404 with the closest names the trace has.
pub async fn why_item(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    uri: Uri,
) -> Result<Response, ApiError> {
    let item = query_item(&uri).ok_or_else(|| {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "bad-item", "ask with `?item=KIND:NAME`").at("/item")
    })?;
    blocking(state, move |state| {
        let folder = bundle_folder(state, &id)?;
        match why(&folder, &item) {
            Ok(answer) => Ok(json_response(StatusCode::OK, to_json_bytes(&answer))),
            Err(WhyFailure::Bundle(_)) => Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unreadable-bundle",
                "this bundle's trace cannot be read; `acompose verify` tells why",
            )),
            Err(WhyFailure::Item(WhyError::BadItem)) => Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "bad-item",
                "ask about source:<id>, skill:<name>, role:<slug>, personality:<slug> or instruction:<id>",
            )
            .at("/item")),
            Err(WhyFailure::Item(WhyError::Unknown { suggestions, .. })) => {
                let body = json!({
                    "code": "unknown-item",
                    "message": "nothing of that kind with this name is in the bundle's trace",
                    "pointer": "/item",
                    "findings": [],
                    "suggestions": suggestions,
                });
                Ok(json_response(StatusCode::NOT_FOUND, document::json_bytes(&body)))
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_item_is_percent_decoded() {
        let uri: Uri = "/api/v1/bundles/ab12/why?x=1&item=skill%3Adeploy-check".parse().unwrap_or_default();
        assert_eq!(query_item(&uri).as_deref(), Some("skill:deploy-check"));
        let broken: Uri = "/why?item=%zz".parse().unwrap_or_default();
        assert_eq!(query_item(&broken), None);
        let none: Uri = "/why".parse().unwrap_or_default();
        assert_eq!(query_item(&none), None);
    }
}
