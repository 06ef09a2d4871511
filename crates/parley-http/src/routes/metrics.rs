//! `GET /metrics`: the Prometheus text exposition. Served on the main
//! address, or only on `PARLEY_METRICS_LISTEN` when that is set.

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use parley_domain::metrics::Metrics;

use crate::error::ApiError;

async fn metrics(State(m): State<Metrics>) -> Result<impl IntoResponse, ApiError> {
    let text = m.render().await?;
    Ok(([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], text))
}

pub fn routes<S: Clone + Send + Sync + 'static>(metrics: Metrics) -> Router<S> {
    Router::new().route("/metrics", get(self::metrics)).with_state(metrics)
}
