//! The page and its assets, embedded in the binary: no file is read and nothing is
//! fetched at run time. The vendored terminal (xterm.js 6.0.0 and its fit addon, MIT)
//! ships with its licence, served beside it.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

const INDEX: &[u8] = include_bytes!("../assets/index.html");

/// Every asset by the name the page asks for, with its media type.
const ASSETS: [(&str, &str, &[u8]); 9] = [
    ("app.js", "text/javascript; charset=utf-8", include_bytes!("../assets/app.js")),
    ("swarm.js", "text/javascript; charset=utf-8", include_bytes!("../assets/swarm.js")),
    ("app.css", "text/css; charset=utf-8", include_bytes!("../assets/app.css")),
    ("xterm.js", "text/javascript; charset=utf-8", include_bytes!("../assets/vendor/xterm.js")),
    ("xterm.css", "text/css; charset=utf-8", include_bytes!("../assets/vendor/xterm.css")),
    ("addon-fit.js", "text/javascript; charset=utf-8", include_bytes!("../assets/vendor/addon-fit.js")),
    ("xterm-LICENSE", "text/plain; charset=utf-8", include_bytes!("../assets/vendor/xterm-LICENSE")),
    ("addon-fit-LICENSE", "text/plain; charset=utf-8", include_bytes!("../assets/vendor/addon-fit-LICENSE")),
    ("favicon.svg", "image/svg+xml", include_bytes!("../assets/favicon.svg")),
];

/// The page. It carries no data: everything it shows comes through the API.
pub async fn index() -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], INDEX).into_response()
}

pub async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(asset, _, _)| *asset == name) {
        Some((_, media_type, bytes)) => ([(header::CONTENT_TYPE, *media_type)], *bytes).into_response(),
        None => ApiError::new(StatusCode::NOT_FOUND, "not-found", "there is nothing at this address").response(),
    }
}
