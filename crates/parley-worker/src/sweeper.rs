//! The sweeper: every `PARLEY_SWEEP_INTERVAL` (and once at start) it runs
//! the automation pass (stale installations, idle conversations, records
//! past their retention) and the housekeeping that keeps in-memory limits
//! bounded.
//!
//! Several instances may share a database. The automation pass runs in
//! one of them at a time (`Database::lead`); an instance whose turn comes
//! while another sweeps skips it. Each instance keeps its own interval, so
//! N instances make up to N passes per interval, one after another, each
//! finding only what changed since the last (a few indexed reads when
//! there is nothing to do). Should two passes ever overlap (a lead lost
//! with its connection mid-pass), their units still change each row once:
//! they lock what they change and skip what another unit holds.

use std::sync::Arc;
use std::time::Duration;

use parley_domain::Database;
use parley_domain::attachments::AttachmentService;
use parley_domain::auth::AuthService;
use parley_domain::automation::Automation;
use parley_domain::limits::RateLimits;
use parley_domain::metrics::Metrics;
use parley_domain::verification::service::VerificationService;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The task name instances agree on (see `Database::lead`).
const SWEEPER: &str = "sweeper";
/// How long to wait to learn whether another instance is sweeping; the
/// in-memory housekeeping must not wait behind a stuck answer.
const LEAD_WITHIN: Duration = Duration::from_secs(10);

/// What the sweeper works on.
pub struct Sweeper {
    pub db: Database,
    pub automation: Automation,
    pub limits: Arc<RateLimits>,
    pub auth: AuthService,
    pub verification: VerificationService,
    pub metrics: Metrics,
    pub every: Duration,
    /// Removes the uploads no message named in a day.
    pub attachments: Arc<AttachmentService>,
}

impl Sweeper {
    pub fn spawn(self, tasks: &TaskTracker, shutdown: CancellationToken) {
        tasks.spawn(async move {
            let mut tick = tokio::time::interval(self.every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tick.tick() => {
                        // A pass is many small write units; at shutdown it
                        // stops between two of them and the rest waits for
                        // the next start.
                        tokio::select! {
                            _ = shutdown.cancelled() => break,
                            _ = self.pass() => {}
                        }
                    }
                }
            }
        });
    }

    async fn pass(&self) {
        self.automate().await;
        self.limits.shrink();
        self.auth.shrink();
        self.verification.shrink();
    }

    /// The automation pass, if no other instance is running it.
    async fn automate(&self) {
        let _lead = match tokio::time::timeout(LEAD_WITHIN, self.db.lead(SWEEPER)).await {
            Ok(Ok(Some(lead))) => lead,
            Ok(Ok(None)) => {
                tracing::debug!("another instance is sweeping; skipping this pass");
                return;
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "cannot tell whether another instance is sweeping; skipping this pass");
                return;
            }
            Err(_) => {
                tracing::warn!("no answer on whether another instance is sweeping; skipping this pass");
                return;
            }
        };
        if let Err(e) = self.auth.prune_failures().await {
            tracing::warn!(error = %e, "could not prune old sign-in failures");
        }
        match self.automation.sweep().await {
            Ok(report) => {
                self.metrics.sweep_completed();
                if report.marked_stale > 0 || report.closed > 0 || report.pruned > 0 || report.given_up > 0 {
                    tracing::info!(
                        marked_stale = report.marked_stale,
                        closed = report.closed,
                        pruned = report.pruned,
                        deliveries_given_up = report.given_up,
                        "sweep"
                    );
                }
            }
            Err(e) => tracing::error!(error = %e, "sweep failed"),
        }
        self.remove_unnamed_uploads().await;
    }

    /// Uploads no message named, a batch at a time, a bounded number of
    /// batches a pass (the next pass goes on).
    async fn remove_unnamed_uploads(&self) {
        const BATCH: u32 = 100;
        let mut removed = 0;
        for _ in 0..10 {
            match self.attachments.sweep(BATCH).await {
                Ok(n) => {
                    removed += n;
                    if n < BATCH as usize {
                        break;
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "removing unnamed uploads failed");
                    break;
                }
            }
        }
        if removed > 0 {
            tracing::info!(removed, "unnamed uploads removed");
        }
    }
}
