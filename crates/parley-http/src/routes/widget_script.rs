//! `GET /widget.js`: the embeddable widget, compiled into the binary so
//! that running Parley needs no build step and no files beside it.

use axum::Router;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use tower_http::compression::CompressionLayer;

use crate::AppState;
use crate::static_file::StaticFile;

static SCRIPT: StaticFile = StaticFile::new(include_bytes!("../../assets/widget.js"), "text/javascript; charset=utf-8");
/// The page API's types, for partners who write TypeScript.
static TYPES: StaticFile = StaticFile::new(include_bytes!("../../assets/widget.d.ts"), "application/typescript; charset=utf-8");

/// Partners' pages embed one unversioned address, so browsers keep the
/// script a few minutes and then ask whether it changed.
async fn script(headers: HeaderMap) -> Response {
    SCRIPT.respond(&headers, "public, max-age=300, must-revalidate")
}

async fn types(headers: HeaderMap) -> Response {
    TYPES.respond(&headers, "public, max-age=300, must-revalidate")
}

/// Gzipped for browsers that take it (all do): the script is mostly
/// text that repeats, and every partner's visitor fetches it.
pub fn routes() -> Router<AppState> {
    Router::new().route("/widget.js", get(script)).route("/widget.d.ts", get(types)).layer(CompressionLayer::new().gzip(true))
}
