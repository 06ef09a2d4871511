//! The instance's feed follower: reads every entry appended to the feed,
//! by this instance or another, and tells the hub whose streams to wake.
//!
//! It also counts the conversations the entries are about as changed
//! (`feed::Changes`), so that polls answered from memory read again.
//!
//! It is woken by this instance's commits and, on PostgreSQL, by the other
//! instances' notifications; it also reads every `POLL`, so a lost
//! notification delays streams by at most that, never loses an entry
//! (streams read the feed themselves from their own cursors). An entry
//! committed behind a transaction still running is not readable yet
//! (`FeedRead::feed_held_back_since`): the follower then looks again
//! soon, backing off, rather than at the next poll. Once the oldest entry
//! held back has waited `BLOCKED_WARN`, a warning names the session that
//! holds it (every stream and long poll of the database waits on it),
//! again every `BLOCKED_WARN` while it lasts.

use std::sync::Arc;
use std::time::Duration;

use parley_domain::Database;
use parley_domain::clock::Clock;
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
/// Entries held back this long (behind a running transaction) leave the
/// polls answered from memory unsure of every conversation: they read
/// the database, which has those entries' messages, until the feed moves
/// again. Shorter holds are routine on PostgreSQL and cost nothing.
const HELD_BACK_POLLS_READ: Duration = Duration::from_secs(1);

pub struct FeedFollower {
    pub db: Database,
    pub hub: Arc<Hub>,
    /// The clock entries are stamped with, to tell how long one waited.
    pub clock: Arc<dyn Clock>,
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
        // Polls answered from memory before now may have missed what was
        // committed before the feed's end was found.
        self.db.conversation_changes().everything_changed();
        let mut held_back_wait = HELD_BACK_FIRST;
        let mut warned: Option<Instant> = None;
        loop {
            let wait = match self.step(&mut at).await {
                Ok(Some(since)) => {
                    let waited = self.clock.now().since(since);
                    if waited >= HELD_BACK_POLLS_READ {
                        self.db.conversation_changes().everything_changed();
                    }
                    if waited >= BLOCKED_WARN && warned.is_none_or(|w| w.elapsed() >= BLOCKED_WARN) {
                        self.name_blocker(waited).await;
                        warned = Some(Instant::now());
                    }
                    let wait = held_back_wait;
                    held_back_wait = (held_back_wait * 2).min(HELD_BACK_LONGEST);
                    wait
                }
                Ok(None) => {
                    held_back_wait = HELD_BACK_FIRST;
                    POLL
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the feed; streams look for themselves");
                    self.db.conversation_changes().everything_changed();
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

    /// Logs the session that holds entries back, so that whoever runs
    /// the database can end it. Its query is not logged: it may hold data.
    /// Its state and start are shown only to roles allowed to see them
    /// (`pg_read_all_stats` on PostgreSQL); "?" otherwise.
    async fn name_blocker(&self, waited: Duration) {
        let waited_s = waited.as_secs();
        match self.db.read(|r| Ok(r.feed_blocker()?)).await {
            Ok(Some(b)) => tracing::warn!(
                waited_s,
                pid = b.pid,
                database = b.database.as_deref().unwrap_or("?"),
                application = b.application.as_deref().unwrap_or("?"),
                state = b.state.as_deref().unwrap_or("?"),
                running_s = b.running.map_or_else(|| "?".to_owned(), |r| r.as_secs().to_string()),
                "live updates are held back by a transaction still running on the database server; end it (pg_terminate_backend) or set idle_in_transaction_session_timeout"
            ),
            Ok(None) => tracing::warn!(
                waited_s,
                "live updates are held back by a transaction still running on the database server that has no session (see pg_prepared_xacts), or that has just ended"
            ),
            Err(e) => {
                tracing::warn!(waited_s, error = %e, "live updates are held back, and the transaction holding them could not be looked up")
            }
        }
    }

    /// Reads what was appended after `at` and publishes it; answers since
    /// when entries are held back, if they are, asked in the unit of the
    /// last read.
    async fn step(&self, at: &mut Position) -> Result<Option<parley_domain::Timestamp>, parley_domain::DomainError> {
        loop {
            let from = *at;
            let (marks, held_back) = self
                .db
                .read(move |r| {
                    let marks = r.feed_tail(from, BATCH)?;
                    let held_back = if marks.len() < BATCH as usize { r.feed_held_back_since()? } else { None };
                    Ok((marks, held_back))
                })
                .await?;
            if let Some(last) = marks.last() {
                *at = last.position;
                // The only place another instance's commits are counted.
                // This instance's, counted at their commit, count once
                // more: it cannot tell them apart, and a second count
                // costs a poll one read at most.
                let changed: Vec<_> = marks.iter().filter_map(|m| m.conversation).collect();
                self.db.conversation_changes().changed(&changed);
                self.hub.publish(&marks);
            }
            if marks.len() < BATCH as usize {
                return Ok(held_back);
            }
        }
    }
}
