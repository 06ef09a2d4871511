//! Layers around every route: request logs, panic containment, CORS and
//! the security headers of HTML pages.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::header::HeaderName;
use axum::http::{HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use parley_domain::metrics::Metrics;
use pin_project_lite::pin_project;
use tower::{Layer, Service};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::set_header::{MakeHeaderValue, SetResponseHeaderLayer};
use tower_http::trace::{DefaultOnResponse, MakeSpan, TraceLayer};
use tracing::{Level, Span};

use crate::error::ApiError;

/// Counts every request by route template, method and status, with its
/// latency. A tower layer rather than `from_fn`, which boxes the rest of
/// the stack and its future on every request.
#[derive(Clone)]
pub struct TrackLayer {
    metrics: Metrics,
}

impl TrackLayer {
    pub fn new(metrics: Metrics) -> Self {
        Self { metrics }
    }
}

impl<S> Layer<S> for TrackLayer {
    type Service = Track<S>;

    fn layer(&self, inner: S) -> Track<S> {
        Track { inner, metrics: self.metrics.clone() }
    }
}

#[derive(Clone)]
pub struct Track<S> {
    inner: S,
    metrics: Metrics,
}

impl<S, B> Service<Request<B>> for Track<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = TrackFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        // The matched path is a shared string: keeping it costs no copy.
        let route = req.extensions().get::<MatchedPath>().cloned();
        // Label values come from a fixed set: any client can send any method.
        let method = match *req.method() {
            Method::GET => "GET",
            Method::POST => "POST",
            Method::PUT => "PUT",
            Method::PATCH => "PATCH",
            Method::DELETE => "DELETE",
            Method::OPTIONS => "OPTIONS",
            Method::HEAD => "HEAD",
            _ => "other",
        };
        TrackFuture { inner: self.inner.call(req), metrics: self.metrics.clone(), route, method, started: Instant::now() }
    }
}

pin_project! {
    pub struct TrackFuture<F> {
        #[pin]
        inner: F,
        metrics: Metrics,
        route: Option<MatchedPath>,
        method: &'static str,
        started: Instant,
    }
}

impl<F, E> Future for TrackFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let outcome = ready!(this.inner.poll(cx));
        if let Ok(response) = &outcome {
            let route = this.route.as_ref().map_or("unmatched", MatchedPath::as_str);
            this.metrics.request(route, this.method, response.status().as_u16(), this.started.elapsed());
        }
        Poll::Ready(outcome)
    }
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
/// check against the site's domains happens per request with a clear 403.
/// No credentials are allowed: the web app's cookie-authenticated routes
/// (`/app`) must never be readable from another origin, and allowing
/// credentials with a mirrored origin would make them so.
/// `Last-Event-ID` is what an EventSource sends when it reconnects.
/// The demo's `/sandbox` pages are left out: they hand out the demo
/// admin's bearer token, which a page of another site must not read (it
/// could then use the admin API against a developer's running demo). So
/// is the web app (`/app`): its pages are for its own origin only, and
/// no page elsewhere has a reason to be told it may read them.
pub fn cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(|_, request: &axum::http::request::Parts| {
            let path = request.uri.path();
            !["/sandbox", "/app"].iter().any(|own| path.strip_prefix(own).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')))
        }))
        .allow_methods([Method::GET, Method::POST, Method::PATCH, Method::DELETE, Method::OPTIONS])
        .allow_headers([header::CONTENT_TYPE, header::ACCEPT, header::AUTHORIZATION, HeaderName::from_static("last-event-id")])
        .expose_headers([header::RETRY_AFTER])
        .max_age(std::time::Duration::from_secs(86_400))
}

/// The policy HTML pages get. They (the sandbox, the magic-link page, the
/// web app) run no inline script, so a strict policy holds: scripts only
/// from this service, no framing, no plugins. `public_origin` is where the
/// widget script and the API are served from when `PARLEY_PUBLIC_URL`
/// names another host than the browser's.
pub fn page_policy(public_origin: &str) -> HeaderValue {
    let own = if public_origin.is_empty() { String::new() } else { format!(" {public_origin}") };
    let policy = format!(
        "default-src 'none'; script-src 'self'{own}; connect-src 'self'{own}; style-src 'self' 'unsafe-inline'; \
         img-src 'self'{own} data: blob:; font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    );
    HeaderValue::from_str(&policy).unwrap_or_else(|_| HeaderValue::from_static("default-src 'self'; frame-ancestors 'none'"))
}

/// A header value set only on HTML responses.
#[derive(Clone)]
pub struct OnHtml(pub HeaderValue);

impl<B> MakeHeaderValue<Response<B>> for OnHtml {
    fn make_header_value(&mut self, response: &Response<B>) -> Option<HeaderValue> {
        let is_html = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.trim_start().get(..9).is_some_and(|t| t.eq_ignore_ascii_case("text/html")));
        is_html.then(|| self.0.clone())
    }
}

/// `nosniff` on every response; on HTML ones also the content security
/// policy, a same-origin referrer and no framing.
pub fn security_headers(public_origin: &str) -> SecurityHeaders {
    use tower::layer::util::Stack;
    Stack::new(
        SetResponseHeaderLayer::overriding(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        Stack::new(
            SetResponseHeaderLayer::overriding(header::CONTENT_SECURITY_POLICY, OnHtml(page_policy(public_origin))),
            Stack::new(
                SetResponseHeaderLayer::overriding(header::REFERRER_POLICY, OnHtml(HeaderValue::from_static("same-origin"))),
                SetResponseHeaderLayer::overriding(header::X_FRAME_OPTIONS, OnHtml(HeaderValue::from_static("DENY"))),
            ),
        ),
    )
}

pub type SecurityHeaders = tower::layer::util::Stack<
    SetResponseHeaderLayer<HeaderValue>,
    tower::layer::util::Stack<
        SetResponseHeaderLayer<OnHtml>,
        tower::layer::util::Stack<SetResponseHeaderLayer<OnHtml>, SetResponseHeaderLayer<OnHtml>>,
    >,
>;
