//! The delivery loop.
//!
//! It claims due deliveries (leased, so a crashed worker's claims come back
//! when their leases run out), sends them concurrently within a global
//! bound, shared fairly between tenants and bounded per endpoint (see
//! `parley_domain::webhooks::fairness`), and records each attempt with its
//! consequence, and its effect on the endpoint's circuit breaker, in one
//! write. It wakes as soon as a commit adds deliveries, and otherwise
//! looks for due retries every poll interval. On shutdown it stops claiming
//! and waits for the attempts in flight, for at most the shutdown grace.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use parley_domain::metrics::Metrics;
use parley_domain::webhooks::fairness::{self, InFlight, Slots};
use parley_domain::webhooks::schedule::{Response, next_step};
use parley_domain::webhooks::{Attempt, AttemptRecord, ClaimedDelivery, NextStep};
use parley_domain::{Clock, Database, ids};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{DeliverySettings, Sender};

/// What a claim left behind, which decides how long the loop waits.
enum Left {
    /// Nothing due: wait for a signal or the next retry.
    Nothing,
    /// Deliveries due but over their bounds: wait for an attempt to end.
    OverBounds,
    /// Due deliveries another instance was claiming at that moment.
    Contended,
}

/// How soon a contended claim is tried again.
const CONTENDED_RETRY: Duration = Duration::from_millis(20);

pub struct WebhookWorker {
    db: Database,
    clock: Arc<dyn Clock>,
    sender: Sender,
    settings: DeliverySettings,
    metrics: Metrics,
    /// Attempts whose request is out, by tenant and endpoint: what the
    /// fair shares are counted from.
    in_flight: Mutex<InFlight>,
}

impl WebhookWorker {
    pub fn new(db: Database, clock: Arc<dyn Clock>, settings: DeliverySettings, metrics: Metrics) -> Result<Arc<Self>, reqwest::Error> {
        let sender = Sender::new(settings.timeout, settings.allow_private, &settings.extra_roots, settings.links.clone())?;
        Ok(Arc::new(Self { db, clock, sender, settings, metrics, in_flight: Mutex::new(InFlight::default()) }))
    }

    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let signal = self.db.deliveries_signal();
        let slots = Arc::new(Semaphore::new(self.settings.concurrency.max(1)));
        let mut in_flight = JoinSet::new();
        while !shutdown.is_cancelled() {
            let free = slots.available_permits();
            let (claimed, left) = if free == 0 { (Vec::new(), Left::OverBounds) } else { self.claim(free).await };
            let found = !claimed.is_empty();
            for delivery in claimed {
                let Ok(slot) = Arc::clone(&slots).acquire_owned().await else { break };
                let worker = Arc::clone(&self);
                let out = self.start(&delivery);
                in_flight.spawn(async move {
                    let _slot = slot;
                    worker.attempt(delivery, out).await;
                });
            }
            while in_flight.try_join_next().is_some() {}
            if found && slots.available_permits() > 0 {
                continue; // more may be due right now
            }
            // Wait for new deliveries, a free slot (an endpoint may have
            // left its bound), or the next due retry. Deliveries due now
            // but over their bounds wait for an attempt to end, with the
            // poll as a backstop: no need to ask when the next one is due.
            let wait = match left {
                Left::Nothing => self.idle_wait().await,
                Left::OverBounds => self.settings.poll_interval,
                // Another instance locked what this one chose a moment
                // ago; what it leaves (or what falls due) is looked at
                // again soon, not a poll interval later.
                Left::Contended => CONTENDED_RETRY.min(self.settings.poll_interval),
            };
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = signal.notified() => {},
                Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {},
                _ = tokio::time::sleep(wait) => {},
            }
        }
        // Attempts still out when the grace is up are abandoned: their
        // leases run out and another instance, or the next start, retries
        // them. Delivery is at least once, so nothing is lost.
        let drained = tokio::time::timeout(self.settings.shutdown_grace, async { while in_flight.join_next().await.is_some() {} }).await;
        if drained.is_err() {
            tracing::warn!(
                abandoned = in_flight.len(),
                "webhook attempts still in flight at shutdown; their leases will let them be retried"
            );
            in_flight.abort_all();
            while in_flight.join_next().await.is_some() {}
        }
    }

    /// Claims due deliveries for at most `free` slots: tenants take turns
    /// within their fair shares, endpoints within their bounds. A claim
    /// never takes what it could not start at once, so no lease runs out
    /// while its delivery waits here. Also says whether deliveries are due
    /// that were left for now.
    ///
    /// The worker wakes on every commit that adds deliveries, and while
    /// its endpoints are at their bounds most wakes find nothing to take.
    /// So it first looks on a reader, off the writer's queue; only when
    /// that finds work does it choose and lease again inside one write,
    /// where the choice sees every committed attempt, failure and pause.
    async fn claim(&self, free: usize) -> (Vec<ClaimedDelivery>, Left) {
        let now = self.clock.now();
        let lease_until = now.plus(self.settings.lease);
        let slots = Slots { total: self.settings.concurrency.max(1), per_endpoint: self.settings.per_endpoint.max(1) };
        let per_endpoint = u32::try_from(slots.per_endpoint).unwrap_or(u32::MAX);
        let snapshot = self.in_flight.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let looked = self.db.read(move |r| Ok(r.due_deliveries(now, per_endpoint)?)).await;
        match looked {
            Ok(due) if fairness::pick(&due, &snapshot, free, slots).is_empty() => {
                return (Vec::new(), if due.is_empty() { Left::Nothing } else { Left::OverBounds });
            }
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %e, "could not read due webhook deliveries");
                return (Vec::new(), Left::Nothing);
            }
        }
        let claimed = self
            .db
            .write(move |tx| {
                let due = tx.claimable_deliveries(now, per_endpoint)?;
                let chosen = fairness::pick(&due, &snapshot, free, slots);
                let left = if due.len() > chosen.len() { Left::OverBounds } else { Left::Nothing };
                Ok((tx.lease_deliveries(&chosen, now, lease_until)?, left))
            })
            .await;
        match claimed {
            // The reader saw work to take and the claim found it locked.
            Ok((leased, Left::Nothing)) if leased.is_empty() => (leased, Left::Contended),
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::error!(error = %e, "could not claim webhook deliveries");
                (Vec::new(), Left::Nothing)
            }
        }
    }

    /// Counts a delivery as out; the returned guard counts it back in.
    fn start(self: &Arc<Self>, d: &ClaimedDelivery) -> Out {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        *in_flight.tenants.entry(d.tenant_id).or_default() += 1;
        *in_flight.endpoints.entry(d.webhook.id).or_default() += 1;
        Out { worker: Arc::clone(self), tenant: d.tenant_id, endpoint: d.webhook.id }
    }

    /// Until the next retry falls due, at most one poll interval.
    ///
    /// A delivery due already but not claimed waits for a bound: an attempt
    /// finishing (which wakes the loop) or the next poll, not a busy loop.
    async fn idle_wait(&self) -> Duration {
        let poll = self.settings.poll_interval;
        let now = self.clock.now();
        match self.db.read(|r| Ok(r.next_delivery_due()?)).await {
            Ok(Some(due)) if due > now => due.since(now).min(poll).max(Duration::from_millis(5)),
            _ => poll,
        }
    }

    /// Sends one delivery, counted as out until its outcome is recorded,
    /// then records the attempt and its effect on the endpoint.
    async fn attempt(&self, delivery: ClaimedDelivery, out: Out) {
        let now = self.clock.now();
        let started = Instant::now();
        let (response, error) = self.sender.send(&delivery, now).await;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let number = delivery.attempts + 1;
        let next = next_step(&self.settings.schedule, number, &response, now, ids::jitter());
        let status_code = response.status_code();
        tracing::info!(
            delivery = delivery.delivery_id.0,
            endpoint = delivery.webhook.id.0,
            event = delivery.kind.as_str(),
            attempt = number,
            status_code,
            duration_ms,
            error = error.as_deref(),
            outcome = outcome(&next),
            "webhook attempt"
        );
        self.metrics.webhook_attempt(outcome(&next));
        let record = AttemptRecord {
            delivery_id: delivery.delivery_id,
            tenant_id: delivery.tenant_id,
            endpoint_id: delivery.webhook.id,
            attempt: Attempt { attempted_at: now, duration_ms, status_code, error },
            next,
        };
        // An endpoint that answers is up, whatever it answered; one that
        // does not answer, or answers 5xx or 429, counts towards a pause.
        let answered = matches!(response, Response::Status { code, .. } if code < 500 && code != 429);
        let (tenant, endpoint, finished) = (record.tenant_id, record.endpoint_id, self.clock.now());
        let written = self
            .db
            .write(move |tx| {
                tx.record_attempt(&record)?;
                let health = tx.count_endpoint_outcome(tenant, endpoint, answered)?;
                let pause = if answered { None } else { fairness::pause_after_failure(health, finished) };
                if let Some(pause) = pause {
                    tx.pause_endpoint(tenant, endpoint, pause)?;
                }
                Ok((health, pause))
            })
            .await;
        // The slot is given back once the outcome is recorded: a claim
        // made earlier would not see this failure (PostgreSQL commits the
        // worker's units side by side) and could send where the endpoint
        // is to be paused or probed one attempt at a time.
        drop(out);
        if let Ok((health, Some(pause))) = &written {
            tracing::warn!(
                endpoint = endpoint.0,
                failures = health.failures,
                pauses = pause.pauses,
                paused_until_ms = pause.until.as_millis(),
                "webhook endpoint keeps failing; pausing it"
            );
        }
        if let Err(e) = written {
            // The lease runs out and the delivery is attempted again:
            // at least once, never lost.
            tracing::error!(error = %e, delivery = delivery.delivery_id.0, "could not record a webhook attempt");
        }
    }
}

fn outcome(next: &NextStep) -> &'static str {
    match next {
        NextStep::Delivered => "delivered",
        NextStep::RetryAt(_) => "retry",
        NextStep::Failed => "failed",
        NextStep::DisableEndpoint => "endpoint_disabled",
    }
}

/// A delivery whose request is out; dropping it counts it back in.
struct Out {
    worker: Arc<WebhookWorker>,
    tenant: parley_domain::model::TenantId,
    endpoint: parley_domain::model::WebhookId,
}

impl Drop for Out {
    fn drop(&mut self) {
        let mut in_flight = self.worker.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        decrement(&mut in_flight.tenants, self.tenant);
        decrement(&mut in_flight.endpoints, self.endpoint);
    }
}

fn decrement<K: std::hash::Hash + Eq>(map: &mut std::collections::HashMap<K, usize>, key: K) {
    if let std::collections::hash_map::Entry::Occupied(mut e) = map.entry(key) {
        *e.get_mut() -= 1;
        if *e.get() == 0 {
            e.remove();
        }
    }
}
