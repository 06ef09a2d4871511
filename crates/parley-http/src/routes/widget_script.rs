//! `GET /widget.js`: the embeddable widget, compiled into the binary so
//! that running Parley needs no build step and no files beside it.

use std::sync::LazyLock;

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};

use crate::AppState;

const SCRIPT: &str = include_str!("../../assets/widget.js");

/// A strong validator: the script's digest, so a new build changes it.
static ETAG: LazyLock<String> = LazyLock::new(|| {
    let digest = Sha256::digest(SCRIPT.as_bytes());
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
});

async fn script(headers: HeaderMap) -> Response {
    let etag = ETAG.as_str();
    let cache = (header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300, must-revalidate"));
    let tag = (header::ETAG, HeaderValue::from_str(etag).unwrap_or(HeaderValue::from_static("\"widget\"")));
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    if fresh {
        return (StatusCode::NOT_MODIFIED, [cache, tag]).into_response();
    }
    let kind = (header::CONTENT_TYPE, HeaderValue::from_static("text/javascript; charset=utf-8"));
    ([kind, cache, tag], SCRIPT).into_response()
}

pub fn routes() -> Router<AppState> {
    Router::new().route("/widget.js", get(script))
}
