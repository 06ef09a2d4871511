//! What the service does by itself: installations without heartbeats
//! become stale, idle conversations close, and records past their
//! retention are pruned.
//!
//! Each pass works in batches, one write unit per batch, re-reading its
//! candidates inside the unit: a change and its event commit together, a
//! pass can be repeated without effect, and several processes sweeping the
//! same database cannot close a conversation twice.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, Timestamp};
use crate::error::DomainError;
use crate::events::{self, ClosedBy};
use crate::model::*;
use crate::store::{Database, Prunable, WriteTx};

/// Where the last completed pass is recorded (service-wide state).
pub const LAST_SWEEP_KEY: &str = "sweeper_last_run";

const BATCH: u32 = 200;
/// Rows pruned per write unit: small enough that other writes never wait
/// long behind a prune.
const PRUNE_BATCH: u32 = 500;
/// Prune batches per kind in one pass; the rest waits for the next pass,
/// so a large backlog is worked off without one pass running for long.
const PRUNE_BATCHES_PER_PASS: usize = 200;

#[derive(Clone, Debug)]
pub struct AutomationSettings {
    /// `PARLEY_HEARTBEAT_STALE_AFTER`.
    pub stale_after: Duration,
    /// `PARLEY_AUTO_CLOSE_AFTER`.
    pub auto_close_after: Duration,
    /// `PARLEY_EVENT_RETENTION`: how long events, delivery logs, spent
    /// tokens and challenges are kept.
    pub retention: Duration,
    /// How long a webhook delivery may stay pending before it is failed:
    /// the retry schedule's span. A paused endpoint's deliveries do not
    /// spend their retries, so without this a dead endpoint would keep
    /// them (and their events) for ever.
    pub delivery_give_up_after: Duration,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub marked_stale: usize,
    pub closed: usize,
    /// Rows removed because they outlived the retention.
    pub pruned: usize,
    /// Deliveries failed because their retry schedule ran out.
    pub given_up: usize,
}

#[derive(Clone)]
pub struct Automation {
    db: Database,
    clock: Arc<dyn Clock>,
    settings: AutomationSettings,
}

impl Automation {
    pub fn new(db: Database, clock: Arc<dyn Clock>, settings: AutomationSettings) -> Self {
        Self { db, clock, settings }
    }

    /// One pass: stale installations, idle conversations, deliveries
    /// given up, what outlived the retention, the inbox's totals folded,
    /// then the record that the pass ran.
    pub async fn sweep(&self) -> Result<SweepReport, DomainError> {
        let now = self.clock.now();
        let mut report = SweepReport::default();
        loop {
            let n = self.mark_stale(now).await?;
            report.marked_stale += n.changed;
            if n.seen < BATCH as usize {
                break;
            }
        }
        loop {
            let n = self.close_idle(now).await?;
            report.closed += n.changed;
            if n.seen < BATCH as usize {
                break;
            }
        }
        report.given_up = self.give_up_deliveries(now).await?;
        report.pruned = self.prune(now).await?;
        self.db.write(|tx| Ok(tx.fold_conversation_counts()?)).await?;
        self.db.write(move |tx| Ok(tx.set_state(LAST_SWEEP_KEY, now.as_millis())?)).await?;
        Ok(report)
    }

    /// Fails deliveries still pending past the retry schedule's span.
    async fn give_up_deliveries(&self, now: Timestamp) -> Result<usize, DomainError> {
        let created_before = now.minus(self.settings.delivery_give_up_after);
        self.in_batches(move |tx| Ok(tx.expire_deliveries(created_before, now, PRUNE_BATCH)?)).await
    }

    /// Removes what outlived the retention, kind by kind, in small write
    /// units. Events go with their deliveries and attempts, but never
    /// while a delivery of theirs is still pending.
    async fn prune(&self, now: Timestamp) -> Result<usize, DomainError> {
        let mut pruned = 0;
        for what in Prunable::ALL {
            let cutoff = what.cutoff(now, self.settings.retention);
            pruned += self.in_batches(move |tx| Ok(tx.prune(what, cutoff, PRUNE_BATCH)?)).await?;
        }
        Ok(pruned)
    }

    /// Runs `unit`, which handles at most `PRUNE_BATCH` rows, in write units
    /// of its own until one handles fewer (nothing is left) or the pass has
    /// done its share; returns the rows handled.
    async fn in_batches<F>(&self, unit: F) -> Result<usize, DomainError>
    where
        F: Fn(&mut dyn WriteTx) -> Result<usize, DomainError> + Clone + Send + 'static,
    {
        let mut done = 0;
        for _ in 0..PRUNE_BATCHES_PER_PASS {
            let n = self.db.write(unit.clone()).await?;
            done += n;
            if n < PRUNE_BATCH as usize {
                break;
            }
        }
        Ok(done)
    }

    async fn mark_stale(&self, now: Timestamp) -> Result<Batch, DomainError> {
        let cutoff = now.minus(self.settings.stale_after);
        self.db
            .write(move |tx| {
                let candidates = tx.stale_candidates(cutoff, BATCH)?;
                let mut batch = Batch { seen: candidates.len(), changed: 0 };
                for mut ctx in candidates {
                    let previous = ctx.installation.status();
                    tx.set_heartbeat_status(ctx.scope(), ctx.installation.id, InstallationStatus::Stale)?;
                    ctx.installation.heartbeat_status = InstallationStatus::Stale;
                    // A disabled installation stays "disabled": no change to announce.
                    if ctx.installation.status() != previous {
                        let event = events::installation_health_changed(&ctx.tenant, &ctx.site, &ctx.installation, previous, now);
                        tx.insert_event(ctx.tenant.id, &event)?;
                        batch.changed += 1;
                    }
                }
                Ok(batch)
            })
            .await
    }

    async fn close_idle(&self, now: Timestamp) -> Result<Batch, DomainError> {
        let idle = self.settings.auto_close_after;
        let cutoff = now.minus(idle);
        self.db
            .write(move |tx| {
                let candidates = tx.idle_conversations(cutoff, BATCH)?;
                let batch = Batch { seen: candidates.len(), changed: candidates.len() };
                for (tenant, mut c) in candidates {
                    let scope = ConversationScope { tenant: tenant.id, site: Some(c.site_id), operator: None };
                    c.status = ConversationStatus::Closed;
                    c.closed_at = Some(now);
                    tx.update_conversation(scope, &c)?;
                    let note = NewMessage {
                        conversation_id: c.id,
                        sender: Sender { kind: SenderKind::System, name: None, operator_id: None },
                        body: "Conversation closed after a period without messages".to_owned(),
                        internal: false,
                        created_at: now,
                        client_message_id: None,
                        attachment_ids: Vec::new(),
                    };
                    crate::feed::record::message(tx, &tenant, scope, &c, &note)?;
                    let closed = events::conversation_closed(&tenant, &c, ClosedBy::Automation, now);
                    crate::feed::record::conversation_changed(tx, &tenant, &c, Some(closed), true, now)?;
                }
                Ok(batch)
            })
            .await
    }
}

struct Batch {
    seen: usize,
    changed: usize,
}
