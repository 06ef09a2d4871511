//! The route table.
//!
//! API routes are declared once, relative to their prefix, and mounted under
//! both `/api` and `/api/v1` (the contract publishes both); `/health` is
//! also served at the root. The OpenAPI document is collected from the same
//! declarations, so a route cannot exist without its documentation.

mod admin;
mod health;
mod metrics;
mod mobile;
mod openapi;
mod sandbox;
mod verification;
mod webhooks;
mod widget;
mod widget_script;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use utoipa_axum::router::OpenApiRouter;

use crate::AppState;
use crate::error::ApiError;
use crate::middleware;

/// `/metrics` alone, for `PARLEY_METRICS_LISTEN`.
pub fn metrics_router(metrics: parley_domain::metrics::Metrics) -> Router {
    self::metrics::routes(metrics)
}

/// Largest accepted request body.
pub const BODY_LIMIT: usize = 64 * 1024;

fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(health::routes())
        .merge(widget::routes())
        .merge(mobile::routes())
        .merge(admin::routes())
        .merge(webhooks::routes())
        .merge(verification::routes())
}

/// The service's routes. `/metrics` is among them unless it is served on
/// its own address (see [`metrics_router`]).
pub fn router(state: AppState, with_metrics: bool) -> Router {
    let mut root = OpenApiRouter::with_openapi(openapi::base())
        .merge(health::routes())
        .merge(verification::page_routes())
        .nest("/api/v1", api())
        .nest("/api", api());
    if state.sandbox.is_some() {
        root = root.merge(sandbox::routes());
    }
    let (mut router, doc) = root.split_for_parts();
    let doc = openapi::finish(doc);
    let metrics = state.metrics.clone();
    if with_metrics {
        router = router.merge(self::metrics::routes(metrics.clone()));
    }
    router
        .merge(openapi::routes(doc))
        .merge(widget_script::routes())
        .fallback(|| async { ApiError::RouteNotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(metrics, middleware::track))
        .with_state(state)
        .layer(middleware::cors())
        .layer(middleware::trace())
        .layer(middleware::catch_panic())
}
