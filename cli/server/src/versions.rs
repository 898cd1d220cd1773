//! Versions on every write: a read answers with the file's version in `ETag`, a write
//! names the version it edits in `If-Match`, and a write over any other version is
//! refused with 409 and what is there now, so two tabs, or the page and the cli, never
//! overwrite each other's edits. The version itself is the driver's
//! (`people::version`: the SHA-256 of the file's bytes).

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use crate::error::ApiError;

/// The version a request names in `If-Match`, without quotes or a weak prefix. A list or
/// `*` is not a version of one file and counts as none.
pub fn requested(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::IF_MATCH)?.to_str().ok()?.trim();
    let value = value.strip_prefix("W/").unwrap_or(value);
    let version = value.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')).unwrap_or(value);
    let plain = !version.is_empty()
        && version.len() <= 80
        && version.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-');
    plain.then(|| version.to_owned())
}

/// A write that must name the version it edits.
pub fn required(headers: &HeaderMap) -> Result<String, ApiError> {
    requested(headers).ok_or_else(|| {
        ApiError::new(
            StatusCode::PRECONDITION_REQUIRED,
            "version-required",
            "a write names the version it edits in `If-Match` (the `ETag` of the read it started from)",
        )
    })
}

/// Refuses a write whose version is not the current one; `current` is what is there now
/// (shown by the page beside the edit).
pub fn check(expected: Option<&str>, version: &str, current: impl FnOnce() -> Value) -> Result<(), ApiError> {
    match expected {
        Some(expected) if expected != version => Err(ApiError::new(
            StatusCode::CONFLICT,
            "stale-version",
            "this was changed since it was opened (in another tab or by the cli); nothing was written",
        )
        .with_current(version, current())),
        _ => Ok(()),
    }
}

/// Adds `ETag` to a response.
pub fn tagged(mut response: Response, version: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(&format!("\"{version}\"")) {
        response.headers_mut().insert(header::ETAG, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::IF_MATCH, HeaderValue::from_str(value).unwrap_or(HeaderValue::from_static("")));
        headers
    }

    #[test]
    fn if_match_is_one_plain_version() {
        assert_eq!(requested(&with("\"ab12\"")), Some("ab12".to_owned()));
        assert_eq!(requested(&with("W/\"ab12\"")), Some("ab12".to_owned()));
        assert_eq!(requested(&with("absent")), Some("absent".to_owned()));
        assert_eq!(requested(&with("*")), None);
        assert_eq!(requested(&with("\"a\", \"b\"")), None);
        assert_eq!(requested(&HeaderMap::new()), None);
    }

    #[test]
    fn a_stale_version_is_a_conflict() {
        assert!(check(Some("a"), "a", || Value::Null).is_ok());
        assert!(check(None, "a", || Value::Null).is_ok());
        assert!(check(Some("b"), "a", || Value::Null).is_err());
    }
}
