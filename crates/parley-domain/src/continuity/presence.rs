//! Which conversations have a widget stream open on this instance, told
//! to the database so that every instance's mail worker knows whether the
//! visitor is still on the page.
//!
//! Streams only change memory; one loop writes what changed, in a few
//! transactions every [`PRESENCE_FLUSH`] (streams that opened, and
//! conversations whose last stream here ended, brought to a few seconds
//! ahead), and every [`PRESENCE_REFRESH`] pushes all of this instance's
//! open ones forward. Ten thousand widgets reconnecting after a deploy
//! are then a write a second, not twenty thousand. Each instance keeps its
//! own row per conversation and the latest counts, so one whose stream
//! ended never shortens another's (a reload that lands on another
//! instance).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{PRESENCE_GRACE, PRESENCE_REFRESH, PRESENCE_WINDOW};
use crate::clock::Clock;
use crate::model::{ConversationId, TenantId};
use crate::store::Database;

/// How soon a stream that opened or ended is written. Far below the
/// email delay: an answer is never emailed for lack of it.
pub const PRESENCE_FLUSH: Duration = Duration::from_secs(1);

/// Conversations written per transaction. On PostgreSQL a running
/// transaction holds back the live feed's entries committed after it
/// began (`Dialect::visible_tx`): ten thousand streams refreshed in one
/// transaction held every widget's live updates for half a second.
const PRESENCE_BATCH: usize = 500;

pub struct Presence {
    db: Database,
    clock: Arc<dyn Clock>,
    /// This instance's name (`PARLEY_INSTANCE`): whose rows it writes.
    instance: Arc<str>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Streams open here, by conversation.
    open: HashMap<ConversationId, (TenantId, usize)>,
    /// Not yet written: conversations whose first stream here opened, and
    /// those whose last one ended.
    opened: BTreeSet<(ConversationId, TenantId)>,
    ended: BTreeSet<(ConversationId, TenantId)>,
}

/// Held by a stream while it is open.
pub struct PresenceGuard {
    presence: Arc<Presence>,
    tenant: TenantId,
    conversation: ConversationId,
}

impl Presence {
    pub fn new(db: Database, clock: Arc<dyn Clock>, instance: Arc<str>) -> Arc<Self> {
        Arc::new(Self { db, clock, instance, state: Mutex::default() })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A stream of `conversation` opened; written within [`PRESENCE_FLUSH`].
    pub fn enter(self: &Arc<Self>, tenant: TenantId, conversation: ConversationId) -> PresenceGuard {
        let mut state = self.state();
        let count = &mut state.open.entry(conversation).or_insert((tenant, 0)).1;
        *count += 1;
        if *count == 1 {
            state.ended.remove(&(conversation, tenant));
            state.opened.insert((conversation, tenant));
        }
        PresenceGuard { presence: Arc::clone(self), tenant, conversation }
    }

    fn leave(&self, tenant: TenantId, conversation: ConversationId) {
        let mut state = self.state();
        let last = match state.open.get_mut(&conversation) {
            Some((_, n)) if *n > 1 => {
                *n -= 1;
                false
            }
            Some(_) => true,
            None => false,
        };
        if last {
            state.open.remove(&conversation);
            // Written even when its opening was not yet: another instance
            // may still hold back for an earlier row of this one.
            state.opened.remove(&(conversation, tenant));
            state.ended.insert((conversation, tenant));
        }
    }

    /// Writes what changed every [`PRESENCE_FLUSH`], and everything open
    /// every [`PRESENCE_REFRESH`], until `shutdown`; then the streams
    /// still open here are written as ended (they end with the process).
    pub async fn run(self: Arc<Self>, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        let mut ticks = tokio::time::interval(PRESENCE_FLUSH);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut refreshed = Instant::now();
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                _ = ticks.tick() => {}
            }
            let refresh = refreshed.elapsed() >= PRESENCE_REFRESH;
            if refresh {
                refreshed = Instant::now();
            }
            self.flush(refresh).await;
        }
        let mut state = std::mem::take(&mut *self.state());
        let ended: Vec<_> = state.open.drain().map(|(c, (t, _))| (c, t)).chain(state.ended).collect();
        self.write(&[], &ended).await;
    }

    /// Writes the streams that opened and ended since the last flush (and
    /// with `refresh` every one open here) in one transaction. What could
    /// not be written is kept for the next flush.
    pub async fn flush(&self, refresh: bool) {
        let (opened, ended) = {
            let mut state = self.state();
            let opened: Vec<_> = if refresh {
                state.opened.clear();
                state.open.iter().map(|(c, (t, _))| (*c, *t)).collect()
            } else {
                std::mem::take(&mut state.opened).into_iter().collect()
            };
            (opened, std::mem::take(&mut state.ended).into_iter().collect::<Vec<_>>())
        };
        if !self.write(&opened, &ended).await {
            let mut state = self.state();
            let State { open, opened: pending_open, ended: pending_end } = &mut *state;
            // Unless a stream changed them meanwhile.
            pending_open.extend(opened.into_iter().filter(|(c, _)| open.contains_key(c)));
            pending_end.extend(ended.into_iter().filter(|(c, _)| !open.contains_key(c)));
        }
    }

    /// Whether it was all written, in transactions of at most
    /// [`PRESENCE_BATCH`] conversations. What a failed flush wrote is
    /// written again by the next.
    async fn write(&self, opened: &[(ConversationId, TenantId)], ended: &[(ConversationId, TenantId)]) -> bool {
        let mut written = true;
        for (list, ended) in [(opened, false), (ended, true)] {
            // In one order, whoever writes: by conversation.
            let mut rows: Vec<_> = list.iter().map(|(c, t)| (*t, *c)).collect();
            rows.sort_unstable_by_key(|(_, c)| *c);
            for batch in rows.chunks(PRESENCE_BATCH) {
                written &= self.write_batch(batch.to_vec(), ended).await;
            }
        }
        written
    }

    /// Streams that opened (`ended` false) or whose last stream here ended.
    async fn write_batch(&self, rows: Vec<(TenantId, ConversationId)>, ended: bool) -> bool {
        let now = self.clock.now();
        let until = now.plus(if ended { PRESENCE_GRACE } else { PRESENCE_WINDOW });
        let count = rows.len();
        let instance = Arc::clone(&self.instance);
        let written = self.db.write(move |tx| Ok(tx.set_presence(&instance, &rows, until, ended)?)).await;
        if let Err(e) = &written {
            tracing::warn!(error = %e, conversations = count, "could not record open widget streams; kept for the next try");
        }
        written.is_ok()
    }
}

impl Drop for PresenceGuard {
    fn drop(&mut self) {
        self.presence.leave(self.tenant, self.conversation);
    }
}
