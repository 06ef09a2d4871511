//! `GET /metrics`: the Prometheus text exposition. It tells every tenant's
//! volume, so it is never public: it is served on `PARLEY_METRICS_LISTEN`,
//! or on the main address only to `Authorization: Bearer
//! $PARLEY_METRICS_TOKEN`; anything else gets the 404 of an unknown route.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, Method, header};
use axum::response::IntoResponse;
use axum::routing::any;
use parley_domain::metrics::Metrics;
use subtle::ConstantTimeEq;

use crate::error::ApiError;

#[derive(Clone)]
struct Exposure {
    metrics: Metrics,
    /// Required bearer token, when one is configured.
    token: Option<Arc<str>>,
}

async fn metrics(State(e): State<Exposure>, method: Method, headers: HeaderMap) -> Result<impl IntoResponse, ApiError> {
    // Any other method is answered like an unknown route, so nothing tells
    // that the route exists.
    if method != Method::GET {
        return Err(ApiError::RouteNotFound);
    }
    if let Some(token) = &e.token {
        // The scheme is case-insensitive (RFC 9110); the token is not.
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let allowed = presented.is_some_and(|p| bool::from(p.as_bytes().ct_eq(token.as_bytes())));
        if !allowed {
            return Err(ApiError::RouteNotFound);
        }
    }
    let text = e.metrics.render().await?;
    Ok(([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], text))
}

/// `/metrics`, answered only with `token` when one is given.
pub fn routes<S: Clone + Send + Sync + 'static>(metrics: Metrics, token: Option<String>) -> Router<S> {
    Router::new().route("/metrics", any(self::metrics)).with_state(Exposure { metrics, token: token.map(Arc::from) })
}
