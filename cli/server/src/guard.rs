//! The guard in front of every route: a `Host` that names this server (DNS rebinding),
//! an `Origin` that is this server when a browser sends one (cross-site forms and
//! scripts), the per-run bearer token on all of `/api/v1`, and the security headers
//! every response carries. It knows nothing of People.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::connections::closing;
use crate::error::ApiError;
use crate::state::AppState;

/// The page loads only its own scripts, styles and connections. Inline script is never
/// allowed; inline style is, because the terminal's renderer writes its own style
/// elements at run time (no data reaches a style: every value is set as text).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; \
form-action 'none'; frame-ancestors 'none'";

/// The subprotocol prefix by which a browser WebSocket carries the token (a browser
/// cannot set `Authorization` on a WebSocket).
pub const TOKEN_PROTOCOL_PREFIX: &str = "acompose.token.";

/// Draws a 256-bit token from the system's random source, as lowercase hex.
pub fn new_token() -> Result<String, String> {
    let mut bytes = [0_u8; 32];
    getrandom::fill(&mut bytes).map_err(|error| format!("cannot draw a random token: {error}"))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// The `Host` values that name this server.
fn allowed_hosts(port: u16) -> [String; 3] {
    [format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")]
}

/// Refuses a foreign `Host` or `Origin` with 403 before anything runs, and adds the
/// security headers to every response.
pub async fn same_origin(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let hosts = allowed_hosts(state.port);
    let host_ok = request
        .headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|host| hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(host)));
    let origin_ok = match request.headers().get(header::ORIGIN) {
        // Requests without `Origin` come from non-browser clients; the token guards them.
        None => true,
        Some(value) => value.to_str().ok().is_some_and(|origin| {
            origin
                .strip_prefix("http://")
                .is_some_and(|rest| hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(rest)))
        }),
    };
    // A refused request's connection is closed: it may not be held open for more.
    let mut response = if !host_ok {
        closing(ApiError::forbidden("foreign-host", "the Host header does not name this server").response())
    } else if !origin_ok {
        closing(ApiError::forbidden("foreign-origin", "the request comes from another site").response())
    } else {
        next.run(request).await
    };
    add_security_headers(response.headers_mut());
    response
}

fn add_security_headers(headers: &mut HeaderMap) {
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("cross-origin-resource-policy", HeaderValue::from_static("same-origin"));
    headers.insert("cross-origin-opener-policy", HeaderValue::from_static("same-origin"));
}

/// Every `/api/v1` route needs the token, reads included: the roster is private too.
pub async fn require_token(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    if presented_token(request.headers()).is_some_and(|token| same_bytes(token.as_bytes(), state.token.as_bytes())) {
        // The connection has shown the token: it leaves the unproven pool.
        if let Some(slot) = request.extensions().get::<crate::connections::Slot>() {
            slot.prove();
        }
        next.run(request).await
    } else {
        // Without the token the connection is closed once refused, so a client that has
        // none cannot keep connections open.
        closing(ApiError::unauthorized().response())
    }
}

/// The token from `Authorization: Bearer …`, or from a WebSocket subprotocol.
fn presented_token(headers: &HeaderMap) -> Option<&str> {
    if let Some(token) = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
    {
        return Some(token.trim());
    }
    headers.get(header::SEC_WEBSOCKET_PROTOCOL).and_then(|value| value.to_str().ok()).and_then(|value| {
        value.split(',').map(str::trim).find_map(|protocol| protocol.strip_prefix(TOKEN_PROTOCOL_PREFIX))
    })
}

/// Compares without stopping at the first difference, so timing tells nothing.
fn same_bytes(left: &[u8], right: &[u8]) -> bool {
    left.len() == right.len() && left.iter().zip(right).fold(0_u8, |difference, (a, b)| difference | (a ^ b)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_and_differ() {
        let first = new_token().unwrap_or_default();
        let second = new_token().unwrap_or_default();
        assert_eq!(first.len(), 64);
        assert_ne!(first, second);
    }

    #[test]
    fn comparison_needs_every_byte() {
        assert!(same_bytes(b"abc", b"abc"));
        assert!(!same_bytes(b"abc", b"abd"));
        assert!(!same_bytes(b"abc", b"ab"));
    }
}
