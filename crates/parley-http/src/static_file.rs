//! Files compiled into the binary (the widget, the web app's stylesheet
//! and script, the icon), served with a strong validator so that browsers
//! keep them and learn of a new release at once.

use std::sync::OnceLock;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

pub struct StaticFile {
    body: &'static [u8],
    content_type: &'static str,
    digest: OnceLock<String>,
}

impl StaticFile {
    pub const fn new(body: &'static [u8], content_type: &'static str) -> Self {
        Self { body, content_type, digest: OnceLock::new() }
    }

    /// The first 96 bits of the body's SHA-256, in hex: a new build of
    /// the file changes it.
    pub fn version(&self) -> &str {
        self.digest.get_or_init(|| Sha256::digest(self.body).iter().take(12).map(|b| format!("{b:02x}")).collect())
    }

    /// The file, or 304 when the request's `If-None-Match` holds its
    /// version, with `cache_control`.
    pub fn respond(&self, headers: &HeaderMap, cache_control: &'static str) -> Response {
        let etag = format!("\"{}\"", self.version());
        let cache = (header::CACHE_CONTROL, HeaderValue::from_static(cache_control));
        let tag = (header::ETAG, HeaderValue::from_str(&etag).unwrap_or(HeaderValue::from_static("\"static\"")));
        let fresh = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
        if fresh {
            return (StatusCode::NOT_MODIFIED, [cache, tag]).into_response();
        }
        let kind = (header::CONTENT_TYPE, HeaderValue::from_static(self.content_type));
        ([kind, cache, tag], self.body).into_response()
    }
}
