//! The route table.
//!
//! API routes are declared once, relative to their prefix, and mounted under
//! both `/api` and `/api/v1` (the contract publishes both); `/health` is
//! also served at the root. The OpenAPI document is collected from the same
//! declarations, so a route cannot exist without its documentation.

mod account;
mod admin;
mod audit;
mod canned;
mod channels;
mod devices;
mod erasure;
mod files;
mod health;
mod mail;
mod metrics;
mod mobile;
mod openapi;
mod sandbox;
mod search;
mod tokens;
mod verification;
mod webhooks;
mod widget;
mod widget_script;

use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use parley_domain::metrics::Metrics;
use tower::ServiceBuilder;
use tower_http::timeout::RequestBodyDeadlineLayer;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

use crate::AppState;
use crate::error::ApiError;
use crate::middleware;

pub(crate) use files::received;

/// `/metrics` alone, for `PARLEY_METRICS_LISTEN` (with the metrics token
/// when one is configured).
pub fn metrics_router(metrics: parley_domain::metrics::Metrics, token: Option<String>) -> Router {
    self::metrics::routes(metrics, token)
}

/// Where the main listener serves `/metrics`. (No `Debug`: it holds the
/// token.)
#[derive(Clone)]
pub enum MetricsAccess {
    /// Not on the main listener (it has its own, or none).
    Hidden,
    /// On the main listener, to this bearer token only.
    Token(String),
}

pub struct RouterOptions {
    pub metrics: MetricsAccess,
    /// A request body must arrive whole within this time (408 otherwise).
    pub body_timeout: Duration,
    /// `PARLEY_PUBLIC_URL`, allowed as a script and API source in pages.
    pub public_url: String,
}

/// Largest accepted request body.
pub const BODY_LIMIT: usize = 64 * 1024;

/// The largest email `POST inbound/email` takes: a reply with a few
/// pictures.
pub const INBOUND_LIMIT: usize = 10 * 1024 * 1024;

/// Routes under one prefix, declared with their whole path.
///
/// The API is served under two prefixes. Axum's `nest` would mount it
/// twice, but a nested route rewrites every request's URI (a format, a
/// parse and an allocation) before it runs; registering the full paths
/// costs nothing per request. The OpenAPI paths get the same prefix.
pub struct Mount {
    prefix: &'static str,
    router: OpenApiRouter<AppState>,
}

impl Mount {
    fn at(prefix: &'static str) -> Self {
        Self { prefix, router: OpenApiRouter::new() }
    }

    pub fn routes(self, (schemas, mut paths, method_router): UtoipaMethodRouter<AppState>) -> Self {
        if !self.prefix.is_empty() {
            paths.paths = paths.paths.into_iter().map(|(path, item)| (format!("{}{path}", self.prefix), item)).collect();
        }
        Self { router: self.router.routes((schemas, paths, method_router)), ..self }
    }

    fn into_router(self) -> OpenApiRouter<AppState> {
        self.router
    }
}

fn api(prefix: &'static str) -> OpenApiRouter<AppState> {
    let mount = Mount::at(prefix);
    let mount = health::routes(mount);
    let mount = widget::routes(mount);
    let mount = mobile::routes(mount);
    let mount = account::routes(mount);
    let mount = files::routes(mount);
    let mount = devices::routes(mount);
    let mount = admin::routes(mount);
    let mount = webhooks::routes(mount);
    let mount = tokens::routes(mount);
    let mount = erasure::routes(mount);
    let mount = canned::routes(mount);
    let mount = audit::routes(mount);
    let mount = search::routes(mount);
    let mount = channels::routes(mount);
    let mount = mail::routes(mount);
    verification::routes(mount).into_router()
}

/// The service's routes.
///
/// Request bodies are read under the body deadline. It wraps the request
/// body only, so a live stream (a GET with no body, holding its response
/// open for as long as the client listens) is never cut by it.
pub fn router(state: AppState, options: RouterOptions) -> Router {
    let mut root = OpenApiRouter::with_openapi(openapi::base())
        .merge(health::routes(Mount::at("")).into_router())
        .merge(verification::page_routes(Mount::at("")).into_router())
        .merge(mail::page_routes(Mount::at("")).into_router())
        .merge(api("/api/v1"))
        .merge(api("/api"));
    if state.sandbox.is_some() {
        root = root.merge(sandbox::routes(Mount::at("")).into_router());
    }
    let (mut router, doc) = root.split_for_parts();
    let doc = openapi::finish(doc, &state.verification.methods());
    let metrics = state.metrics.clone();
    if let MetricsAccess::Token(token) = &options.metrics {
        router = router.merge(self::metrics::routes(metrics.clone(), Some(token.clone())));
    }
    let routes = router
        .merge(openapi::routes(doc))
        .merge(widget_script::routes())
        .merge(crate::app::routes())
        .fallback(|| async { ApiError::RouteNotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .with_state(state);
    stack(routes, metrics, &options)
}

/// Wraps the routes in the layers every request passes.
///
/// Track and trace read the matched route, so they wrap each route, and
/// panic containment sits inside them, so a panic is answered, logged and
/// counted like any 500. Everything else wraps the router once, as one
/// stack: a layer on the router itself would be boxed and cloned per
/// route and per request. CORS and the security headers are outermost, so
/// no answer (a panic's, a 404's, a 413's) leaves without them.
fn stack(routes: Router, metrics: Metrics, options: &RouterOptions) -> Router {
    let routes = routes.layer(middleware::catch_panic()).layer(middleware::TrackLayer::new(metrics)).layer(middleware::trace());
    let outer = ServiceBuilder::new()
        .layer(middleware::cors())
        .layer(middleware::security_headers(&origin(&options.public_url)))
        .layer(RequestBodyDeadlineLayer::new(options.body_timeout))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::Extension(crate::extract::OwnOrigin(origin(&options.public_url).into())))
        .service(routes);
    Router::new().fallback_service(outer)
}

/// The scheme, host and port of a URL, as a content security policy names
/// a source.
fn origin(url: &str) -> String {
    url::Url::parse(url).map(|u| u.origin().ascii_serialization()).ok().filter(|o| o != "null").unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use parley_domain::verification::Method;
    use serde_json::Value;
    use tower::ServiceExt;

    use super::*;

    /// A handler that panics is answered like any 500: with CORS for the
    /// widget's origin, the security headers, and a place in the metrics.
    #[tokio::test]
    async fn a_panic_is_answered_with_every_header_and_counted() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let url = format!("sqlite://{}/panic.sqlite3", dir.path().display());
        let db = parley_storage::open(&url, Default::default()).await.expect("database");
        let metrics = Metrics::new(db.clone(), std::sync::Arc::new(parley_domain::SystemClock), "test");
        let options =
            RouterOptions { metrics: MetricsAccess::Hidden, body_timeout: Duration::from_secs(5), public_url: "http://127.0.0.1".into() };
        async fn boom() -> StatusCode {
            panic!("a handler's bug")
        }
        let routes = Router::new().route("/boom", axum::routing::get(boom));
        let request = Request::get("/boom").header("origin", "https://shop.example").body(Body::empty()).expect("request");
        let response = stack(routes, metrics.clone(), &options).oneshot(request).await.expect("answer");
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(response.headers()["access-control-allow-origin"], "https://shop.example");
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
        let text = metrics.render().await.expect("metrics");
        assert!(text.lines().any(|l| l.contains("route=\"/boom\"") && l.contains("status=\"500\"")), "counted: {text}");
        db.close().await;
    }

    /// Every link names an operation, a response and parameters that
    /// exist: a renamed route must not drop its links without notice.
    #[test]
    fn every_link_points_at_something_real() {
        let (_, doc) = OpenApiRouter::with_openapi(openapi::base()).merge(api("/api/v1")).merge(api("/api")).split_for_parts();
        let doc: Value = serde_json::to_value(openapi::finish(doc, &Method::ALL)).expect("document");
        let mut operations = std::collections::BTreeMap::new();
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for op in item.as_object().expect("item").values().filter(|op| op.get("operationId").is_some()) {
                operations.insert(op["operationId"].as_str().expect("id").to_owned(), (path.clone(), op.clone()));
            }
        }
        let mut links = 0;
        for (_, op) in operations.values() {
            for response in op["responses"].as_object().expect("responses").values() {
                for link in response.get("links").and_then(Value::as_object).into_iter().flat_map(|l| l.values()) {
                    links += 1;
                    let target = link["operationId"].as_str().expect("target id");
                    let (path, target_op) = operations.get(target).unwrap_or_else(|| panic!("no operation {target}"));
                    for name in link.get("parameters").and_then(Value::as_object).into_iter().flat_map(|p| p.keys()) {
                        let (place, name) = name.split_once('.').expect("located parameter");
                        let known = target_op["parameters"].as_array().into_iter().flatten().any(|p| p["name"] == name && p["in"] == place);
                        assert!(known, "{target} ({path}) has no {place} parameter {name}");
                    }
                }
            }
        }
        assert!(links >= 2 * 20, "every link is on both prefixes ({links})");
    }
}
