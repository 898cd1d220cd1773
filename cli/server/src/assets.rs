//! The page and its assets, embedded in the binary: no file is read and nothing is
//! fetched at run time. The vendored terminal (xterm.js 6.0.0 and its fit addon, MIT)
//! ships with its licence, served beside it; the page loads it only on the screens that
//! show a terminal.
//!
//! A browser that accepts gzip gets each text asset gzip-compressed. The assets are
//! fixed, so each is compressed once, on first use, and kept (deflate from
//! `miniz_oxide`; the gzip frame and its CRC-32 are written here): no request pays for
//! compression after the first.

use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
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

/// The compressed forms: the index, then each of [`ASSETS`] in order.
static GZIPPED: OnceLock<Vec<Vec<u8>>> = OnceLock::new();

fn gzipped(index: usize) -> &'static [u8] {
    let all = GZIPPED
        .get_or_init(|| std::iter::once(INDEX).chain(ASSETS.iter().map(|(_, _, bytes)| *bytes)).map(gzip).collect());
    all.get(index).map_or(&[], Vec::as_slice)
}

/// The CRC-32 (IEEE 802.3, reflected, as gzip uses) of `bytes`.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0_u32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// `bytes` as a gzip member (RFC 1952): header, raw deflate, CRC-32 and size.
fn gzip(bytes: &[u8]) -> Vec<u8> {
    // No name, no time, maximum compression, operating system unknown.
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff];
    out.extend_from_slice(&miniz_oxide::deflate::compress_to_vec(bytes, 9));
    out.extend_from_slice(&crc32(bytes).to_le_bytes());
    // ISIZE is the size modulo 2^32, as the format defines it.
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out
}

/// Whether the request's `Accept-Encoding` takes gzip (and does not refuse it, `q=0`).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|parameter| {
                parameter.strip_prefix("q=").is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0))
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

/// The asset as the request takes it: gzip-compressed when accepted.
fn respond(headers: &HeaderMap, media_type: &'static str, plain: &'static [u8], index: usize) -> Response {
    let vary = (header::VARY, HeaderValue::from_static("accept-encoding"));
    let media = (header::CONTENT_TYPE, HeaderValue::from_static(media_type));
    if accepts_gzip(headers) {
        let encoding = (header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        ([media, vary, encoding], gzipped(index)).into_response()
    } else {
        ([media, vary], plain).into_response()
    }
}

/// The page. It carries no data: everything it shows comes through the API.
pub async fn index(headers: HeaderMap) -> Response {
    respond(&headers, "text/html; charset=utf-8", INDEX, 0)
}

pub async fn asset(Path(name): Path<String>, headers: HeaderMap) -> Response {
    match ASSETS.iter().position(|(asset, _, _)| *asset == name) {
        Some(position) => {
            let (_, media_type, bytes) = ASSETS[position];
            respond(&headers, media_type, bytes, position + 1)
        }
        None => ApiError::new(StatusCode::NOT_FOUND, "not-found", "there is nothing at this address").response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crc_is_the_standard_one() {
        // The check value of CRC-32/ISO-HDLC.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn gzip_is_offered_unless_refused() {
        let with = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(value));
            accepts_gzip(&headers)
        };
        assert!(with("gzip, deflate, br, zstd"));
        assert!(with("br;q=1.0, gzip;q=0.8"));
        assert!(!with("gzip;q=0"));
        assert!(!with("br"));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
