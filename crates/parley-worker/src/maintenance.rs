//! Periodic housekeeping: forgets idle rate-limit buckets and expired login
//! failures, so their memory stays bounded.

use std::sync::Arc;
use std::time::Duration;

use parley_domain::auth::AuthService;
use parley_domain::limits::RateLimits;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub fn spawn(tasks: &TaskTracker, shutdown: CancellationToken, limits: Arc<RateLimits>, auth: AuthService, every: Duration) {
    tasks.spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick() => {
                    limits.shrink();
                    auth.shrink();
                }
            }
        }
    });
}
