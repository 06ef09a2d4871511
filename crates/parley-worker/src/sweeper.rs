//! The sweeper: every `PARLEY_SWEEP_INTERVAL` (and once at start) it runs
//! the automation pass (stale installations, idle conversations, records
//! past their retention) and the housekeeping that keeps in-memory limits
//! bounded.

use std::sync::Arc;
use std::time::Duration;

use parley_domain::auth::AuthService;
use parley_domain::automation::Automation;
use parley_domain::limits::RateLimits;
use parley_domain::metrics::Metrics;
use parley_domain::verification::service::VerificationService;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// What the sweeper works on.
pub struct Sweeper {
    pub automation: Automation,
    pub limits: Arc<RateLimits>,
    pub auth: AuthService,
    pub verification: VerificationService,
    pub metrics: Metrics,
    pub every: Duration,
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
        self.limits.shrink();
        self.auth.shrink();
        self.verification.shrink();
    }
}
