//! Which conversations have a widget stream open on this instance, told
//! to the database so that every instance's mail worker knows whether the
//! visitor is still on the page.
//!
//! A stream's opening is written at once; while streams stay open, one
//! transaction every [`PRESENCE_REFRESH`] pushes all of this instance's
//! forward (one write a minute however many streams it holds); when the
//! last stream of a conversation here ends, this instance's presence for
//! it is brought to a few seconds ahead. Each instance keeps its own row
//! per conversation and the latest counts, so one whose stream ended never
//! shortens another's (a reload that lands on another instance).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{PRESENCE_GRACE, PRESENCE_REFRESH, PRESENCE_WINDOW};
use crate::clock::Clock;
use crate::model::{ConversationId, TenantId};
use crate::store::Database;

pub struct Presence {
    db: Database,
    clock: Arc<dyn Clock>,
    /// This instance's name (`PARLEY_INSTANCE`): whose rows it writes.
    instance: Arc<str>,
    open: Mutex<HashMap<ConversationId, (TenantId, usize)>>,
}

/// Held by a stream while it is open.
pub struct PresenceGuard {
    presence: Arc<Presence>,
    tenant: TenantId,
    conversation: ConversationId,
}

impl Presence {
    pub fn new(db: Database, clock: Arc<dyn Clock>, instance: Arc<str>) -> Arc<Self> {
        Arc::new(Self { db, clock, instance, open: Mutex::default() })
    }

    /// A stream of `conversation` opened: written before it answers, so
    /// the mail worker holds back from then on.
    pub async fn enter(self: &Arc<Self>, tenant: TenantId, conversation: ConversationId) -> PresenceGuard {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).entry(conversation).or_insert((tenant, 0)).1 += 1;
        self.write(vec![(tenant, conversation)], PRESENCE_WINDOW, false).await;
        PresenceGuard { presence: Arc::clone(self), tenant, conversation }
    }

    async fn write(&self, mut list: Vec<(TenantId, ConversationId)>, ahead: std::time::Duration, ended: bool) {
        if list.is_empty() {
            return;
        }
        // In one order, whoever writes.
        list.sort_by_key(|(_, c)| c.0);
        let until = self.clock.now().plus(ahead);
        let count = list.len();
        let instance = Arc::clone(&self.instance);
        if let Err(e) = self.db.write(move |tx| Ok(tx.set_presence(&instance, &list, until, ended)?)).await {
            tracing::warn!(error = %e, conversations = count, "could not record open widget streams");
        }
    }

    fn leave(self: &Arc<Self>, tenant: TenantId, conversation: ConversationId) {
        let last = {
            let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
            match open.get_mut(&conversation) {
                Some((_, n)) if *n > 1 => {
                    *n -= 1;
                    false
                }
                Some(_) => {
                    open.remove(&conversation);
                    true
                }
                None => false,
            }
        };
        if last && let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let me = Arc::clone(self);
            runtime.spawn(async move { me.write(vec![(tenant, conversation)], PRESENCE_GRACE, true).await });
        }
    }

    /// Pushes the presence of every stream open here forward, every
    /// [`PRESENCE_REFRESH`], until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        let mut ticks = tokio::time::interval(PRESENCE_REFRESH);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                _ = ticks.tick() => {}
            }
            let list: Vec<_> = self.open.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|(c, (t, _))| (*t, *c)).collect();
            self.write(list, PRESENCE_WINDOW, false).await;
        }
    }
}

impl Drop for PresenceGuard {
    fn drop(&mut self) {
        self.presence.leave(self.tenant, self.conversation);
    }
}
