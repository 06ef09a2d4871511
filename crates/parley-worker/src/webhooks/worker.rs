//! The delivery loop.
//!
//! It claims due deliveries (leased, so a crashed worker's claims come back
//! when their leases run out), sends them concurrently within a global and
//! a per-endpoint bound, and records each attempt with its consequence in
//! one write. It wakes as soon as a commit adds deliveries, and otherwise
//! looks for due retries every poll interval. On shutdown it stops claiming
//! and waits for the attempts in flight.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use parley_domain::metrics::Metrics;
use parley_domain::model::WebhookId;
use parley_domain::webhooks::schedule::next_step;
use parley_domain::webhooks::{Attempt, AttemptRecord, ClaimedDelivery, NextStep};
use parley_domain::{Clock, Database, ids};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{DeliverySettings, Sender};

pub struct WebhookWorker {
    db: Database,
    clock: Arc<dyn Clock>,
    sender: Sender,
    settings: DeliverySettings,
    metrics: Metrics,
    /// Bounds attempts in flight per endpoint.
    endpoints: Mutex<HashMap<WebhookId, Arc<Semaphore>>>,
}

impl WebhookWorker {
    pub fn new(db: Database, clock: Arc<dyn Clock>, settings: DeliverySettings, metrics: Metrics) -> Result<Arc<Self>, reqwest::Error> {
        let sender = Sender::new(settings.timeout, settings.allow_private)?;
        Ok(Arc::new(Self { db, clock, sender, settings, metrics, endpoints: Mutex::new(HashMap::new()) }))
    }

    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let signal = self.db.deliveries_signal();
        let slots = Arc::new(Semaphore::new(self.settings.concurrency.max(1)));
        let mut in_flight = JoinSet::new();
        while !shutdown.is_cancelled() {
            let free = slots.available_permits();
            let claimed = if free == 0 { Vec::new() } else { self.claim(free).await };
            let found = !claimed.is_empty();
            for delivery in claimed {
                let Ok(slot) = Arc::clone(&slots).acquire_owned().await else { break };
                let endpoint = self.endpoint_slot(delivery.webhook.id);
                let worker = Arc::clone(&self);
                in_flight.spawn(async move {
                    let _slot = slot;
                    worker.attempt(delivery, endpoint).await;
                });
            }
            while in_flight.try_join_next().is_some() {}
            if found && slots.available_permits() > 0 {
                continue; // more may be due right now
            }
            // Wait for new deliveries, a free slot (an endpoint may have
            // left its bound), or the next due retry.
            let wait = self.idle_wait().await;
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = signal.notified() => {},
                Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {},
                _ = tokio::time::sleep(wait) => {},
            }
        }
        while in_flight.join_next().await.is_some() {}
    }

    /// Claims due deliveries, leaving out endpoints that already have as
    /// many attempts in flight as they may: a claim never waits behind a
    /// slow endpoint long enough for its lease to run out.
    async fn claim(&self, limit: usize) -> Vec<ClaimedDelivery> {
        let now = self.clock.now();
        let lease_until = now.plus(self.settings.lease);
        let per_endpoint = u32::try_from(self.settings.per_endpoint).unwrap_or(u32::MAX);
        let limit = u32::try_from(limit).unwrap_or(u32::MAX);
        let busy = self.busy_endpoints();
        match self.db.write(move |tx| Ok(tx.claim_deliveries(now, lease_until, limit, per_endpoint, &busy)?)).await {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::error!(error = %e, "could not claim webhook deliveries");
                Vec::new()
            }
        }
    }

    fn busy_endpoints(&self) -> Vec<WebhookId> {
        let map = self.endpoints.lock().unwrap_or_else(|p| p.into_inner());
        map.iter().filter(|(_, s)| s.available_permits() == 0).map(|(id, _)| *id).collect()
    }

    /// Until the next retry falls due, at most one poll interval.
    async fn idle_wait(&self) -> Duration {
        let poll = self.settings.poll_interval;
        match self.db.read(|r| Ok(r.next_delivery_due()?)).await {
            Ok(Some(due)) => due.since(self.clock.now()).min(poll).max(Duration::from_millis(5)),
            _ => poll,
        }
    }

    fn endpoint_slot(&self, id: WebhookId) -> Arc<Semaphore> {
        let mut map = self.endpoints.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(map.entry(id).or_insert_with(|| Arc::new(Semaphore::new(self.settings.per_endpoint.max(1)))))
    }

    /// Sends one delivery, holding an endpoint slot only while the request
    /// is out (the bound protects the partner, not the database), then
    /// records the attempt.
    async fn attempt(&self, delivery: ClaimedDelivery, endpoint: Arc<Semaphore>) {
        let Ok(endpoint_slot) = endpoint.acquire_owned().await else { return };
        let now = self.clock.now();
        let started = Instant::now();
        let (response, error) = self.sender.send(&delivery, now).await;
        drop(endpoint_slot);
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let number = delivery.attempts + 1;
        let next = next_step(&self.settings.schedule, number, &response, now, jitter());
        let status_code = response.status_code();
        tracing::info!(
            delivery = delivery.delivery_id,
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
        if let Err(e) = self.db.write(move |tx| Ok(tx.record_attempt(&record)?)).await {
            // The lease runs out and the delivery is attempted again:
            // at least once, never lost.
            tracing::error!(error = %e, delivery = delivery.delivery_id, "could not record a webhook attempt");
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

/// A value in [-1, 1] to spread retries.
fn jitter() -> f64 {
    match ids::random_bytes::<4>() {
        Ok(b) => f64::from(u32::from_le_bytes(b)) / f64::from(u32::MAX) * 2.0 - 1.0,
        Err(_) => 0.0,
    }
}
