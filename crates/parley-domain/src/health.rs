//! The platform health report behind `GET /health`.
//!
//! `down` (503) when the database cannot be read; `degraded` when webhook
//! delivery lags (a delivery has been due, and attempted by no one, for
//! longer than the allowed age) or the sweeper has not completed a pass for
//! three intervals; `ok` otherwise. A delivery waiting for its scheduled
//! retry is not lag: one tenant's broken endpoint must not degrade the
//! platform for the two days its retries take.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::automation::LAST_SWEEP_KEY;
use crate::clock::{Clock, Timestamp};
use crate::store::Database;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Degraded,
    Down,
}

impl Status {
    pub const ALL: [Status; 3] = [Status::Ok, Status::Degraded, Status::Down];

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
    /// How long the longest-waiting due delivery has waited for a worker.
    pub lag_seconds: u64,
    pub failing_endpoints: u64,
}

#[derive(Clone, Debug)]
pub struct SweeperCheck {
    pub status: Status,
    pub last_run_at: Option<Timestamp>,
    pub interval_seconds: u64,
}

#[derive(Clone, Debug)]
pub struct HealthReport {
    pub status: Status,
    pub checked_at: Timestamp,
    pub instance: Arc<str>,
    pub database: DatabaseCheck,
    /// Absent when the database cannot be read.
    pub webhooks: Option<WebhookCheck>,
    pub sweeper: Option<SweeperCheck>,
}

#[derive(Clone, Debug)]
pub struct HealthSettings {
    /// `PARLEY_SWEEP_INTERVAL`.
    pub sweep_interval: Duration,
    /// `PARLEY_HEALTH_QUEUE_MAX_AGE`: longer delivery lag degrades.
    pub queue_max_age: Duration,
    /// This instance's name: behind a load balancer, which one answered.
    pub instance: Arc<str>,
}

#[derive(Clone)]
pub struct HealthService {
    db: Database,
    clock: Arc<dyn Clock>,
    settings: HealthSettings,
    /// A sweeper that has not run yet is only late once the service has run
    /// for a while.
    started_at: Timestamp,
    /// The last report and when its computation began. The report counts
    /// the whole webhook queue, so callers take turns, and one who asked
    /// while a computation was under way takes the next one's answer
    /// rather than starting another: however many clients ask, one runs.
    last: Arc<tokio::sync::Mutex<Option<(Instant, HealthReport)>>>,
}

impl HealthService {
    pub fn new(db: Database, clock: Arc<dyn Clock>, settings: HealthSettings) -> Self {
        let started_at = clock.now();
        Self { db, clock, settings, started_at, last: Arc::new(tokio::sync::Mutex::new(None)) }
    }

    pub async fn report(&self) -> HealthReport {
        let asked = Instant::now();
        let mut last = self.last.lock().await;
        if let Some((began, report)) = last.as_ref()
            && *began >= asked
        {
            return report.clone();
        }
        let began = Instant::now();
        let report = self.compute().await;
        *last = Some((began, report.clone()));
        report
    }

    async fn compute(&self) -> HealthReport {
        let started = Instant::now();
        let now = self.clock.now();
        let read = self.db.read_long(move |r| Ok((r.outbox_stats()?, r.oldest_due_delivery(now)?, r.state(LAST_SWEEP_KEY)?))).await;
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        let backend = self.db.kind();
        let (stats, oldest_due, last_sweep) = match read {
            Ok(values) => values,
            Err(e) => {
                tracing::error!(error = %e, "health check: database unreachable");
                return HealthReport {
                    status: Status::Down,
                    checked_at: now,
                    instance: Arc::clone(&self.settings.instance),
                    database: DatabaseCheck { status: Status::Down, backend, latency_ms },
                    webhooks: None,
                    sweeper: None,
                };
            }
        };
        let oldest = stats.oldest_pending_at.map_or(Duration::ZERO, |t| now.since(t));
        let lag = oldest_due.map_or(Duration::ZERO, |t| now.since(t));
        let webhooks = WebhookCheck {
            status: if lag > self.settings.queue_max_age { Status::Degraded } else { Status::Ok },
            pending: stats.pending,
            oldest_pending_seconds: oldest.as_secs(),
            lag_seconds: lag.as_secs(),
            failing_endpoints: stats.failing_endpoints,
        };
        let last_run_at = last_sweep.map(Timestamp::from_millis);
        let late_after = self.settings.sweep_interval * 3;
        let since = now.since(last_run_at.unwrap_or(self.started_at));
        let sweeper = SweeperCheck {
            status: if since > late_after { Status::Degraded } else { Status::Ok },
            last_run_at,
            interval_seconds: self.settings.sweep_interval.as_secs(),
        };
        let status = if webhooks.status == Status::Ok && sweeper.status == Status::Ok { Status::Ok } else { Status::Degraded };
        HealthReport {
            status,
            checked_at: now,
            instance: Arc::clone(&self.settings.instance),
            database: DatabaseCheck { status: Status::Ok, backend, latency_ms },
            webhooks: Some(webhooks),
            sweeper: Some(sweeper),
        }
    }
}
