//! Layers around every route: request logs and panic containment.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use parley_domain::metrics::Metrics;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::trace::{DefaultOnResponse, MakeSpan, TraceLayer};
use tracing::{Level, Span};

use crate::error::ApiError;

/// Counts every request by route template, method and status, with its latency.
pub async fn track(State(metrics): State<Metrics>, req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().map_or("unmatched", MatchedPath::as_str).to_owned();
    // Label values come from a fixed set: any client can send any method.
    let method = match req.method().as_str() {
        m @ ("GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS" | "HEAD") => m,
        _ => "other",
    }
    .to_owned();
    let started = Instant::now();
    let response = next.run(req).await;
    metrics.request(&route, &method, response.status().as_u16(), started.elapsed());
    response
}

/// Names a request by its route template, never by its URI: widget URIs
/// carry installation tokens in the path and the query.
#[derive(Clone, Copy)]
pub struct RouteSpan;

impl<B> MakeSpan<B> for RouteSpan {
    fn make_span(&mut self, req: &Request<B>) -> Span {
        let route = req.extensions().get::<MatchedPath>().map_or("unmatched", MatchedPath::as_str);
        tracing::info_span!("request", method = %req.method(), route)
    }
}

pub fn trace() -> TraceLayer<SharedClassifier<ServerErrorsAsFailures>, RouteSpan> {
    TraceLayer::new_for_http().make_span_with(RouteSpan).on_response(DefaultOnResponse::new().level(Level::INFO))
}

pub fn catch_panic() -> CatchPanicLayer<fn(Box<dyn std::any::Any + Send + 'static>) -> Response> {
    CatchPanicLayer::custom(panic_response as fn(_) -> _)
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    ApiError::Internal.into_response()
}

/// CORS around every route, outside routing so preflights are answered
/// before method matching. Any page may call the API: the widget's origin
/// check against the site's domains happens per request with a clear 403,
/// and no route relies on cookies, so no credentials are allowed.
pub fn cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(AllowOrigin::mirror_request())
        .allow_methods([Method::GET, Method::POST, Method::PATCH, Method::DELETE, Method::OPTIONS])
        .allow_headers([header::CONTENT_TYPE, header::ACCEPT, header::AUTHORIZATION])
        .expose_headers([header::RETRY_AFTER])
        .max_age(std::time::Duration::from_secs(86_400))
}
