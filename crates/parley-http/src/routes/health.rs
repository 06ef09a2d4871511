//! `GET /health`: the platform health report.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use parley_domain::health::{HealthReport, Status};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::routes;

use super::Mount;
use crate::AppState;
use crate::views::DateTime;

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(health))
}

#[derive(Serialize, ToSchema)]
pub struct HealthReportView {
    #[schema(value_type = crate::views::names::HealthStatusName)]
    status: &'static str,
    checked_at: DateTime,
    app: AppView,
    checks: ChecksView,
}

#[derive(Serialize, ToSchema)]
struct AppView {
    #[schema(example = "parley")]
    name: &'static str,
    version: &'static str,
    /// The instance that answered (`PARLEY_INSTANCE`, by default the host
    /// name and listening port).
    #[schema(example = "web-1:8080")]
    instance: String,
}

#[derive(Serialize, ToSchema)]
struct ChecksView {
    database: DatabaseCheckView,
    /// Absent when the database cannot be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    webhooks: Option<WebhookCheckView>,
    /// Absent when the database cannot be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    sweeper: Option<SweeperCheckView>,
}

#[derive(Serialize, ToSchema)]
struct SweeperCheckView {
    /// `degraded` when no pass completed for three intervals.
    #[schema(value_type = crate::views::names::HealthStatusName)]
    status: &'static str,
    last_run_at: Option<DateTime>,
    interval_seconds: u64,
}

#[derive(Serialize, ToSchema)]
struct DatabaseCheckView {
    #[schema(value_type = crate::views::names::HealthStatusName)]
    status: &'static str,
    #[schema(value_type = crate::views::names::BackendName)]
    backend: &'static str,
    /// Round-trip time of a query, in milliseconds.
    latency_ms: f64,
}

#[derive(Serialize, ToSchema)]
struct WebhookCheckView {
    #[schema(value_type = crate::views::names::HealthStatusName)]
    status: &'static str,
    /// Deliveries waiting for a first or next attempt.
    pending: u64,
    /// Age of the oldest of them (retries included).
    oldest_pending_seconds: u64,
    /// How long the longest-waiting due delivery has waited for a worker;
    /// `degraded` past `PARLEY_HEALTH_QUEUE_MAX_AGE`.
    lag_seconds: u64,
    /// Endpoints whose pending deliveries have failed at least once.
    failing_endpoints: u64,
}

impl From<HealthReport> for HealthReportView {
    fn from(r: HealthReport) -> Self {
        Self {
            status: r.status.as_str(),
            checked_at: crate::views::at(r.checked_at),
            app: AppView { name: "parley", version: env!("CARGO_PKG_VERSION"), instance: r.instance.to_string() },
            checks: ChecksView {
                database: DatabaseCheckView {
                    status: r.database.status.as_str(),
                    backend: r.database.backend,
                    latency_ms: r.database.latency_ms,
                },
                sweeper: r.sweeper.map(|w| SweeperCheckView {
                    status: w.status.as_str(),
                    last_run_at: w.last_run_at.map(crate::views::at),
                    interval_seconds: w.interval_seconds,
                }),
                webhooks: r.webhooks.map(|w| WebhookCheckView {
                    status: w.status.as_str(),
                    pending: w.pending,
                    oldest_pending_seconds: w.oldest_pending_seconds,
                    lag_seconds: w.lag_seconds,
                    failing_endpoints: w.failing_endpoints,
                }),
            },
        }
    }
}

/// The state of the platform. 200 unless the database cannot be reached, then 503.
#[utoipa::path(get, path = "/health", operation_id = "health", tag = "health",
    responses(
        (status = 200, description = "ok or degraded", body = HealthReportView),
        (status = 503, description = "down", body = HealthReportView)))]
async fn health(State(s): State<AppState>) -> (StatusCode, Json<HealthReportView>) {
    let report = s.health.report().await;
    let status = if report.status == Status::Down { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK };
    (status, Json(report.into()))
}
