//! The platform health report behind `GET /health`.

use std::sync::Arc;
use std::time::Instant;

use crate::clock::{Clock, Timestamp};
use crate::store::Database;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Degraded,
    Down,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Degraded => "degraded",
            Self::Down => "down",
        }
    }
}

#[derive(Clone, Debug)]
pub struct DatabaseCheck {
    pub status: Status,
    pub backend: &'static str,
    pub latency_ms: f64,
}

#[derive(Clone, Debug)]
pub struct WebhookCheck {
    pub status: Status,
    /// Deliveries waiting for a first or next attempt.
    pub pending: u64,
    pub oldest_pending_seconds: u64,
    pub failing_endpoints: u64,
}

#[derive(Clone, Debug)]
pub struct HealthReport {
    pub status: Status,
    pub checked_at: Timestamp,
    pub database: DatabaseCheck,
    pub webhooks: Option<WebhookCheck>,
}

#[derive(Clone)]
pub struct HealthService {
    db: Database,
    clock: Arc<dyn Clock>,
}

impl HealthService {
    pub fn new(db: Database, clock: Arc<dyn Clock>) -> Self {
        Self { db, clock }
    }

    pub async fn report(&self) -> HealthReport {
        let started = Instant::now();
        let stats = self.db.read(|r| Ok(r.outbox_stats()?)).await;
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        let now = self.clock.now();
        let backend = self.db.kind();
        match stats {
            Ok(stats) => HealthReport {
                status: Status::Ok,
                checked_at: now,
                database: DatabaseCheck { status: Status::Ok, backend, latency_ms },
                webhooks: Some(WebhookCheck {
                    status: Status::Ok,
                    pending: stats.pending,
                    oldest_pending_seconds: stats.oldest_pending_at.map_or(0, |t| now.since(t).as_secs()),
                    failing_endpoints: stats.failing_endpoints,
                }),
            },
            Err(e) => {
                tracing::error!(error = %e, "health check: database unreachable");
                HealthReport {
                    status: Status::Down,
                    checked_at: now,
                    database: DatabaseCheck { status: Status::Down, backend, latency_ms },
                    webhooks: None,
                }
            }
        }
    }
}
