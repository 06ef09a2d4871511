//! The push loop, shaped like the webhook worker's: it wakes when a commit
//! queues pushes (here or in another instance), looks on a reader first,
//! then chooses and leases inside one write (a crashed worker's leases
//! run out and another instance sends them), sends within a global bound
//! shared fairly between tenants, and records each outcome. On shutdown
//! it stops claiming and waits for the pushes in flight, for at most the
//! shutdown grace.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use parley_domain::metrics::Metrics;
use parley_domain::model::TenantId;
use parley_domain::push::schedule::{PushStep, next_step};
use parley_domain::push::{ClaimedPush, PushOutcome, fairness};
use parley_domain::{Clock, Database, ids};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{Providers, PushTiming};

/// How soon a claim that found its work taken by another instance looks
/// again.
const CONTENDED_RETRY: Duration = Duration::from_millis(20);

pub struct PushWorker {
    db: Database,
    clock: Arc<dyn Clock>,
    providers: Arc<Providers>,
    metrics: Metrics,
    lease: Duration,
    poll_interval: Duration,
    concurrency: usize,
    shutdown_grace: Duration,
    /// Pushes out, by tenant: what a claim shares the free slots by.
    in_flight: Mutex<HashMap<TenantId, usize>>,
}

/// What a claim came to, beside what it took.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Claim {
    Done,
    /// What the reader saw was taken by another instance meanwhile.
    Contended,
    /// The database failed: wait a poll interval, not a busy loop.
    Failed,
}

impl PushWorker {
    pub fn new(db: Database, clock: Arc<dyn Clock>, providers: Arc<Providers>, timing: PushTiming, metrics: Metrics) -> Arc<Self> {
        Arc::new(Self {
            db,
            clock,
            providers,
            metrics,
            lease: timing.lease,
            poll_interval: timing.poll_interval,
            concurrency: timing.concurrency.max(1),
            shutdown_grace: timing.shutdown_grace,
            in_flight: Mutex::default(),
        })
    }

    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let signal = self.db.pushes_signal();
        let slots = Arc::new(Semaphore::new(self.concurrency));
        let mut in_flight = JoinSet::new();
        while !shutdown.is_cancelled() {
            let free = slots.available_permits();
            let (claimed, outcome) = if free == 0 { (Vec::new(), Claim::Done) } else { self.claim(free).await };
            let found = !claimed.is_empty();
            for push in claimed {
                let Ok(slot) = Arc::clone(&slots).acquire_owned().await else { break };
                let worker = Arc::clone(&self);
                let out = self.start(push.tenant_id);
                in_flight.spawn(async move {
                    let _slot = slot;
                    worker.attempt(push).await;
                    drop(out);
                });
            }
            while in_flight.try_join_next().is_some() {}
            if found && slots.available_permits() > 0 {
                continue; // more may be due right now
            }
            let wait = if outcome == Claim::Contended {
                CONTENDED_RETRY
            } else if outcome == Claim::Failed || slots.available_permits() == 0 {
                self.poll_interval
            } else {
                self.idle_wait().await
            };
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = signal.notified() => {},
                Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {},
                _ = tokio::time::sleep(wait) => {},
            }
        }
        // Pushes still out when the grace is up are abandoned: their
        // leases run out and another instance, or the next start, sends
        // them again.
        let drained = tokio::time::timeout(self.shutdown_grace, async { while in_flight.join_next().await.is_some() {} }).await;
        if drained.is_err() {
            tracing::warn!(abandoned = in_flight.len(), "pushes still in flight at shutdown; their leases will let them be retried");
            in_flight.abort_all();
            while in_flight.join_next().await.is_some() {}
        }
    }

    /// Claims due pushes for at most `free` slots, tenants taking turns.
    /// Also says whether what the reader saw was taken by another
    /// instance meanwhile.
    async fn claim(&self, free: usize) -> (Vec<ClaimedPush>, Claim) {
        let now = self.clock.now();
        let lease_until = now.plus(self.lease);
        let per_tenant = u32::try_from(free).unwrap_or(u32::MAX);
        match self.db.read(move |r| Ok(r.due_pushes(now, per_tenant)?)).await {
            Ok(due) if due.is_empty() => return (Vec::new(), Claim::Done),
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %e, "could not read due pushes");
                return (Vec::new(), Claim::Failed);
            }
        }
        let out = self.in_flight.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let claimed = self
            .db
            .write(move |tx| {
                let due = tx.claimable_pushes(now, per_tenant)?;
                let chosen = fairness::pick(&due, free, &out);
                Ok(tx.lease_pushes(&chosen, now, lease_until)?)
            })
            .await;
        match claimed {
            Ok(leased) if leased.is_empty() => (leased, Claim::Contended),
            Ok(leased) => (self.with_badges(leased).await, Claim::Done),
            Err(e) => {
                tracing::error!(error = %e, "could not claim pushes");
                (Vec::new(), Claim::Failed)
            }
        }
    }

    /// Counts each operator's badge once (a phone and a browser share
    /// it), on a reader: it reads every open conversation the operator
    /// sees, which the writer need not wait for. A push whose badge cannot
    /// be read goes with none rather than not at all.
    async fn with_badges(&self, mut pushes: Vec<ClaimedPush>) -> Vec<ClaimedPush> {
        let mut scopes: Vec<_> = pushes.iter().filter(|p| p.worth_sending()).map(ClaimedPush::operator_scope).collect();
        scopes.sort_by_key(|s| s.operator.map(|(id, _)| id));
        scopes.dedup_by_key(|s| s.operator.map(|(id, _)| id));
        let counted = self
            .db
            .read(move |r| {
                let mut badges = HashMap::new();
                for scope in scopes {
                    badges.insert(scope.operator.map(|(id, _)| id), r.unread_conversations(scope)?);
                }
                Ok(badges)
            })
            .await;
        match counted {
            Ok(badges) => {
                for push in &mut pushes {
                    push.badge = badges.get(&Some(push.operator_id)).copied().unwrap_or(0);
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not count the pushes' badges"),
        }
        pushes
    }

    /// Counts a push of `tenant` as out; the guard counts it back in.
    fn start(self: &Arc<Self>, tenant: TenantId) -> Out {
        *self.in_flight.lock().unwrap_or_else(|p| p.into_inner()).entry(tenant).or_default() += 1;
        Out { worker: Arc::clone(self), tenant }
    }

    /// Until the next push falls due, at most one poll interval.
    async fn idle_wait(&self) -> Duration {
        let now = self.clock.now();
        match self.db.read(|r| Ok(r.next_push_due()?)).await {
            Ok(Some(due)) if due > now => due.since(now).min(self.poll_interval).max(Duration::from_millis(5)),
            Ok(Some(_)) => Duration::from_millis(5),
            _ => self.poll_interval,
        }
    }

    async fn attempt(&self, push: ClaimedPush) {
        let now = self.clock.now();
        let platform = push.target.platform.as_str();
        let step = if push.worth_sending() {
            let started = Instant::now();
            let outcome = self.providers.send(&push, now).await;
            let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let step = next_step(push.attempts + 1, &outcome, now, ids::jitter());
            let reason = match &outcome {
                PushOutcome::Delivered => None,
                PushOutcome::Retry { reason, .. } | PushOutcome::DeadToken { reason } | PushOutcome::Rejected { reason } => {
                    Some(reason.as_str())
                }
            };
            tracing::info!(
                push = push.id.0,
                device = push.target.device_id.0,
                platform,
                about = push.reason.as_str(),
                attempt = push.attempts + 1,
                duration_ms,
                outcome = outcome.label(),
                error = reason,
                "push attempt"
            );
            self.metrics.push_attempt(platform, outcome.label());
            step
        } else {
            // Signed out, disabled, or read on another device since.
            PushStep::GiveUp
        };
        // Spacing counts from when the push went out.
        let record = push.clone();
        let written = self.db.write(move |tx| Ok(tx.finish_push(&record, step, now)?)).await;
        if let Err(e) = written {
            // The lease runs out and the push is sent again: at least once.
            tracing::error!(error = %e, push = push.id.0, "could not record a push attempt");
        }
        if matches!(step, PushStep::RemoveDevice) {
            tracing::info!(device = push.target.device_id.0, platform, "the provider reported the device's token dead; device removed");
        }
    }
}

/// A push whose request is out; dropping it counts it back in.
struct Out {
    worker: Arc<PushWorker>,
    tenant: TenantId,
}

impl Drop for Out {
    fn drop(&mut self) {
        let mut out = self.worker.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = out.get_mut(&self.tenant) {
            *n -= 1;
            if *n == 0 {
                out.remove(&self.tenant);
            }
        }
    }
}
