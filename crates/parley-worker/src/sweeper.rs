//! The sweeper: every `PARLEY_SWEEP_INTERVAL` (and once at start) it runs
//! the automation pass (stale installations, idle conversations, records
//! and conversations past their retention, files to remove) and the
//! housekeeping that keeps in-memory limits bounded.
//!
//! Several instances may share a database. The automation pass runs in
//! one of them at a time (`Database::lead`); an instance whose turn comes
//! while another sweeps skips it. Each instance keeps its own interval, so
//! N instances make up to N passes per interval, one after another, each
//! finding only what changed since the last (a few indexed reads when
//! there is nothing to do). Should two passes ever overlap (a lead lost
//! with its connection mid-pass), their units still change each row once:
//! they lock what they change and skip what another unit holds. Removing
//! a queued file from the store is the exception, and is safe to repeat.

use std::sync::Arc;
use std::time::Duration;

use parley_domain::attachments::AttachmentService;
use parley_domain::auth::AuthService;
use parley_domain::automation::Automation;
use parley_domain::erasure::ErasureService;
use parley_domain::limits::RateLimits;
use parley_domain::metrics::Metrics;
use parley_domain::verification::service::VerificationService;
use parley_domain::{Database, DomainError};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The task name instances agree on (see `Database::lead`).
const SWEEPER: &str = "sweeper";
/// How long to wait to learn whether another instance is sweeping; the
/// in-memory housekeeping must not wait behind a stuck answer.
const LEAD_WITHIN: Duration = Duration::from_secs(10);

/// Conversations erased, uploads removed or queued files tried per
/// batch, and batches per pass, for each of those: a backlog is worked
/// off over several passes without one running for long.
const BATCH: u32 = 100;
const BATCHES_PER_PASS: usize = 10;

/// What the sweeper works on.
pub struct Sweeper {
    pub db: Database,
    pub automation: Automation,
    pub limits: Arc<RateLimits>,
    pub auth: AuthService,
    pub verification: VerificationService,
    pub metrics: Metrics,
    pub every: Duration,
    /// Removes the uploads no message named in a day, and the objects
    /// of files whose rows are gone.
    pub attachments: Arc<AttachmentService>,
    /// Erases the conversations past their retention.
    pub erasure: Arc<ErasureService>,
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
        let erased = in_batches(BATCH, BATCHES_PER_PASS, |n| self.erasure.sweep(n)).await;
        report(erased, "conversations past their retention erased", "erasing conversations past their retention failed");
        let removed = in_batches(BATCH, BATCHES_PER_PASS, |n| self.attachments.sweep(n)).await;
        report(removed, "unnamed uploads removed", "removing unnamed uploads failed");
        // What the store refused when the rows went, or a crash left queued.
        let tried = in_batches(BATCH, BATCHES_PER_PASS, |n| self.attachments.remove_queued(n)).await;
        report(tried, "queued file removals tried", "reading the queue of files to remove failed");
    }
}

/// Runs `step` on batches of `batch` until one comes back short or
/// `passes` have run (the next sweep goes on); how many it handled, and
/// the error that stopped it, if one did.
async fn in_batches<F, Fut>(batch: u32, passes: usize, mut step: F) -> (usize, Option<DomainError>)
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<usize, DomainError>>,
{
    let mut done = 0;
    for _ in 0..passes {
        match step(batch).await {
            Ok(n) => {
                done += n;
                if n < batch as usize {
                    break;
                }
            }
            Err(e) => return (done, Some(e)),
        }
    }
    (done, None)
}

fn report((done, error): (usize, Option<DomainError>), done_message: &'static str, failed_message: &'static str) {
    if done > 0 {
        tracing::info!(done, "{done_message}");
    }
    if let Some(e) = error {
        tracing::error!(error = %e, "{failed_message}");
    }
}
