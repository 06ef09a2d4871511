//! The instance's feed follower: reads every entry appended to the feed,
//! by this instance or another, and tells the hub whose streams to wake.
//!
//! It is woken by this instance's commits and, on PostgreSQL, by the other
//! instances' notifications; it also reads every `POLL`, so a lost
//! notification delays streams by at most that, never loses an entry
//! (streams read the feed themselves from their own cursors). An entry
//! committed behind a transaction still running is not readable yet
//! (`FeedRead::feed_held_back`): the follower then looks again soon,
//! backing off, rather than at the next poll. Entries held back for
//! longer than `BLOCKED_WARN` are logged as a warning naming the session
//! that holds them (every stream and long poll of the database waits on
//! it), again every `BLOCKED_WARN` while it lasts.

use std::sync::Arc;
use std::time::Duration;

use parley_domain::Database;
use parley_domain::feed::{Hub, Position};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How often the feed is read when nothing wakes the follower.
const POLL: Duration = Duration::from_millis(500);
/// Entries read at once.
const BATCH: u32 = 1000;
/// The first and the longest wait for entries held back.
const HELD_BACK_FIRST: Duration = Duration::from_millis(5);
const HELD_BACK_LONGEST: Duration = Duration::from_millis(200);
/// How long entries may wait behind a transaction before it is named.
const BLOCKED_WARN: Duration = Duration::from_secs(10);

pub struct FeedFollower {
    pub db: Database,
    pub hub: Arc<Hub>,
}

impl FeedFollower {
    pub async fn run(self, shutdown: CancellationToken) {
        let signal = self.db.feed_signal();
        // Where the feed ends now: streams opened later read what came
        // before from their own cursors.
        let mut at = loop {
            match self.db.read(|r| Ok(r.feed_end()?)).await {
                Ok(end) => break end,
                Err(e) => tracing::warn!(error = %e, "cannot read the feed; trying again"),
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(POLL) => {}
            }
        };
        let mut held_back_wait = HELD_BACK_FIRST;
        let mut warn_at: Option<Instant> = None;
        loop {
            let wait = match self.step(&mut at).await {
                Ok(true) => {
                    let due = *warn_at.get_or_insert_with(|| Instant::now() + BLOCKED_WARN);
                    if Instant::now() >= due {
                        self.name_blocker().await;
                        warn_at = Some(Instant::now() + BLOCKED_WARN);
                    }
                    let wait = held_back_wait;
                    held_back_wait = (held_back_wait * 2).min(HELD_BACK_LONGEST);
                    wait
                }
                Ok(false) => {
                    held_back_wait = HELD_BACK_FIRST;
                    warn_at = None;
                    POLL
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the feed; streams look for themselves");
                    self.hub.publish_all();
                    POLL
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = signal.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Logs the transaction that holds entries back, so that whoever runs
    /// the database can end it. Its query is not logged: it may hold data.
    async fn name_blocker(&self) {
        match self.db.read(|r| Ok(r.feed_blocker()?)).await {
            Ok(Some(b)) => tracing::warn!(
                pid = b.pid,
                database = b.database.as_deref().unwrap_or("?"),
                application = b.application.as_deref().unwrap_or("?"),
                state = b.state.as_deref().unwrap_or("?"),
                running_s = b.running.as_secs(),
                "live updates are held back by a transaction still running on the database server; end it (pg_terminate_backend) or set idle_in_transaction_session_timeout"
            ),
            Ok(None) => tracing::warn!(
                "live updates are held back by a transaction still running on the database server (a prepared transaction, or one this role cannot see in pg_stat_activity)"
            ),
            Err(e) => tracing::warn!(error = %e, "live updates are held back, and the transaction holding them could not be looked up"),
        }
    }

    /// Reads what was appended after `at` and publishes it; answers
    /// whether entries are held back, asked in the unit of the last read.
    async fn step(&self, at: &mut Position) -> Result<bool, parley_domain::DomainError> {
        loop {
            let from = *at;
            let (marks, held_back) = self
                .db
                .read(move |r| {
                    let marks = r.feed_tail(from, BATCH)?;
                    let held_back = marks.len() < BATCH as usize && r.feed_held_back()?;
                    Ok((marks, held_back))
                })
                .await?;
            if let Some(last) = marks.last() {
                *at = last.position;
                self.hub.publish(&marks);
            }
            if marks.len() < BATCH as usize {
                return Ok(held_back);
            }
        }
    }
}
