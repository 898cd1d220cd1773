//! API errors as `{code, message, pointer, findings}`. Messages are static text or text
//! built from request values the server already checked (slugs); a value read from a
//! file never enters one. The engine's findings are passed on by code, rule pointer,
//! line and column, the same fields `people validate --json` prints.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use acompose_driver::engine::Diagnostic;
use acompose_driver::people::Stop;

/// The largest request body accepted, in bytes: a 64 KiB file, escaped inside a JSON
/// envelope, fits with room to spare.
pub const MAX_REQUEST_BYTES: usize = 256 * 1024;

#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    pointer: Option<String>,
    findings: Vec<Diagnostic>,
    /// With a stale write: the version there now and what it holds.
    current: Option<Box<(String, serde_json::Value)>>,
}

#[derive(Serialize)]
struct ErrorJson<'a> {
    code: &'a str,
    message: &'a str,
    pointer: Option<&'a str>,
    findings: Vec<FindingJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    current: Option<&'a serde_json::Value>,
}

#[derive(Serialize)]
struct FindingJson<'a> {
    code: &'a str,
    message: &'a str,
    pointer: Option<&'a str>,
    file: &'a str,
    line: Option<usize>,
    column: Option<usize>,
    field: Option<&'a str>,
    hint: Option<&'a str>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into(), pointer: None, findings: Vec::new(), current: None }
    }

    /// Adds the current version and content to a refused write.
    pub fn with_current(mut self, version: &str, current: serde_json::Value) -> Self {
        self.current = Some(Box::new((version.to_owned(), current)));
        self
    }

    pub fn at(mut self, pointer: &str) -> Self {
        self.pointer = Some(pointer.to_owned());
        self
    }

    pub fn forbidden(code: &'static str, message: &'static str) -> Self {
        Self::new(StatusCode::FORBIDDEN, code, message)
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "token-required",
            "this request needs the token printed by `acompose serve`",
        )
    }

    pub fn invalid_request(message: &'static str) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid-request", message)
    }

    pub fn not_found_person() -> Self {
        Self::new(StatusCode::NOT_FOUND, "no-such-person", "there is no Person with this id")
    }

    /// The findings of a file the engine refused; the first error names the response.
    pub fn findings(findings: Vec<Diagnostic>) -> Self {
        let first = findings.iter().find(|finding| finding.is_error()).or(findings.first());
        let (code, message, pointer) = first.map_or(("invalid", "the input was refused", None), |finding| {
            (finding.code, finding.message.as_str(), finding.pointer.clone())
        });
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code,
            message: message.to_owned(),
            pointer,
            findings,
            current: None,
        }
    }

    pub fn response(self) -> Response {
        self.into_response()
    }
}

impl From<Stop> for ApiError {
    fn from(stop: Stop) -> Self {
        match stop {
            Stop::Findings(findings) => Self::findings(findings),
            // The host's own refusals name only checked ids and fixed paths.
            Stop::Invalid(message) => Self::new(StatusCode::UNPROCESSABLE_ENTITY, "refused", message),
            Stop::Reported => Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", "the input was refused"),
            // The path stays out of the answer: the page needs no disk layout.
            Stop::Io(_) => {
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "io-error", "the workspace could not be read or written")
            }
        }
    }
}

impl From<acompose_driver::people::FileError> for ApiError {
    fn from(error: acompose_driver::people::FileError) -> Self {
        Self::from(Stop::Io(error))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorJson {
            code: self.code,
            message: &self.message,
            pointer: self.pointer.as_deref(),
            findings: self
                .findings
                .iter()
                .map(|finding| FindingJson {
                    code: finding.code,
                    message: &finding.message,
                    pointer: finding.pointer.as_deref(),
                    file: finding.file.as_deref().unwrap_or_default(),
                    line: finding.position.map(|position| position.line),
                    column: finding.position.map(|position| position.column),
                    field: finding.field.as_deref(),
                    hint: finding.hints.first().map(String::as_str),
                })
                .collect(),
            version: self.current.as_deref().map(|(version, _)| version.as_str()),
            current: self.current.as_deref().map(|(_, current)| current),
        };
        (self.status, Json(body)).into_response()
    }
}

/// Unknown paths answer in the same shape.
pub async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not-found", "there is nothing at this address")
}
