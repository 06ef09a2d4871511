//! Service metrics in the Prometheus (OpenMetrics) text format.
//!
//! One registry per running service, not a process-wide one, so several
//! services in one process (the test suite) keep their own counts. Counts
//! are kept as things happen; the gauges of stored state are read from
//! storage when the metrics are scraped.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeLabel, EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::clock::Clock;
use crate::error::DomainError;
use crate::store::Database;

type Labels = Vec<(&'static str, String)>;

/// The labels of a request. Counted on every request, so they are built
/// without allocating: the route template is shared (see `Metrics::route`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct RequestLabels {
    route: Arc<str>,
    method: &'static str,
    /// Absent from the latency histogram's labels.
    status: Option<u16>,
}

impl EncodeLabelSet for RequestLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), fmt::Error> {
        ("route", &*self.route).encode(encoder.encode_label())?;
        ("method", self.method).encode(encoder.encode_label())?;
        match self.status {
            Some(status) => ("status", status).encode(encoder.encode_label()),
            None => Ok(()),
        }
    }
}

fn latency_histogram() -> Histogram {
    // 0.5 ms to about 4 s.
    Histogram::new(exponential_buckets(0.0005, 2.0, 14))
}

struct Inner {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RequestLabels, Histogram, fn() -> Histogram>,
    /// Route templates seen so far: a fixed set (the routes, and
    /// "unmatched"), each allocated once.
    routes: RwLock<HashSet<Arc<str>>>,
    messages: Family<Labels, Counter>,
    attempts: Family<Labels, Counter>,
    pushes: Family<Labels, Counter>,
    visitor_emails: Family<Labels, Counter>,
    inbound_emails: Family<Labels, Counter>,
    sweeps: Counter,
    queue_depth: Gauge,
    open_conversations: Gauge,
    feed_held_back: Gauge<f64, AtomicU64>,
    streams_open: Gauge,
}

#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
    db: Database,
    /// The clock entries are stamped with, for how long one has waited.
    clock: Arc<dyn Clock>,
}

impl Metrics {
    /// Every series carries the instance's name, so figures from several
    /// instances behind one load balancer stay apart however they are
    /// scraped. The label is `parley_instance`: Prometheus gives every
    /// series its own `instance` (the scrape target) and renames an
    /// exporter's `instance` to `exported_instance`, or lets it overwrite
    /// the target's.
    pub fn new(db: Database, clock: Arc<dyn Clock>, instance: &str) -> Self {
        let label = (Cow::Borrowed("parley_instance"), Cow::Owned(instance.to_owned()));
        let mut registry = Registry::with_prefix_and_labels("parley", std::iter::once(label));
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<RequestLabels, Histogram, fn() -> Histogram>::new_with_constructor(latency_histogram as fn() -> Histogram);
        let messages = Family::<Labels, Counter>::default();
        let attempts = Family::<Labels, Counter>::default();
        let pushes = Family::<Labels, Counter>::default();
        let visitor_emails = Family::<Labels, Counter>::default();
        let inbound_emails = Family::<Labels, Counter>::default();
        let sweeps = Counter::default();
        let queue_depth = Gauge::default();
        let open_conversations = Gauge::default();
        let feed_held_back = Gauge::<f64, AtomicU64>::default();
        let streams_open = Gauge::default();
        registry.register("http_requests", "HTTP requests by route template, method and status", requests.clone());
        registry.register("http_request_duration_seconds", "HTTP request latency by route template and method", latency.clone());
        registry.register("messages_created", "Messages this instance added, by sender type (operator-only notes aside)", messages.clone());
        registry.register("webhook_attempts", "Webhook delivery attempts, by outcome", attempts.clone());
        registry.register("push_attempts", "Operator push attempts, by platform and outcome", pushes.clone());
        registry.register(
            "visitor_emails",
            "Emails to visitors (answers they missed, transcripts), by kind and outcome",
            visitor_emails.clone(),
        );
        registry.register("inbound_emails", "Emailed replies received, by outcome", inbound_emails.clone());
        registry.register("sweeps", "Completed automation passes", sweeps.clone());
        registry.register("webhook_queue_depth", "Webhook deliveries waiting for an attempt", queue_depth.clone());
        registry.register("open_conversations", "Conversations not closed", open_conversations.clone());
        registry.register(
            "feed_held_back_seconds",
            "How long the oldest committed live update not yet readable has waited, behind a transaction still running (0 when none)",
            feed_held_back.clone(),
        );
        registry.register("streams_open", "Live streams open on this instance", streams_open.clone());
        let routes = RwLock::default();
        let inner = Inner {
            registry,
            requests,
            latency,
            routes,
            messages,
            attempts,
            pushes,
            visitor_emails,
            inbound_emails,
            sweeps,
            queue_depth,
            open_conversations,
            feed_held_back,
            streams_open,
        };
        Self { inner: Arc::new(inner), db, clock }
    }

    /// `route` is a route template (never a raw path: the set must stay
    /// small), `method` one of a fixed set.
    pub fn request(&self, route: &str, method: &'static str, status: u16, elapsed: Duration) {
        let mut labels = RequestLabels { route: self.route(route), method, status: Some(status) };
        self.inner.requests.get_or_create(&labels).inc();
        labels.status = None;
        self.inner.latency.get_or_create(&labels).observe(elapsed.as_secs_f64());
    }

    fn route(&self, name: &str) -> Arc<str> {
        let known = self.inner.routes.read().unwrap_or_else(|p| p.into_inner()).get(name).cloned();
        known.unwrap_or_else(|| {
            let mut routes = self.inner.routes.write().unwrap_or_else(|p| p.into_inner());
            let route: Arc<str> = routes.get(name).cloned().unwrap_or_else(|| Arc::from(name));
            routes.insert(Arc::clone(&route));
            route
        })
    }

    /// `outcome` is `delivered`, `retry`, `failed` or `endpoint_disabled`.
    pub fn webhook_attempt(&self, outcome: &str) {
        self.inner.attempts.get_or_create(&vec![("outcome", outcome.to_owned())]).inc();
    }

    /// `outcome` is `delivered`, `retry`, `dead_token` or `rejected`.
    pub fn push_attempt(&self, platform: &str, outcome: &str) {
        self.inner.pushes.get_or_create(&vec![("platform", platform.to_owned()), ("outcome", outcome.to_owned())]).inc();
    }

    /// `kind` is `reply` or `transcript`; `outcome` is `sent`, `retry`,
    /// `failed` or `dropped`.
    pub fn visitor_email(&self, kind: &str, outcome: &str) {
        self.inner.visitor_emails.get_or_create(&vec![("kind", kind.to_owned()), ("outcome", outcome.to_owned())]).inc();
    }

    /// `outcome` is `added`, `repeated`, `unknown_token`,
    /// `sender_mismatch` or `refused`.
    pub fn inbound_email(&self, outcome: &str) {
        self.inner.inbound_emails.get_or_create(&vec![("outcome", outcome.to_owned())]).inc();
    }

    /// The count of open streams, kept by the streams themselves.
    pub(crate) fn streams_open(&self) -> Gauge {
        self.inner.streams_open.clone()
    }

    pub fn sweep_completed(&self) {
        self.inner.sweeps.inc();
    }

    /// The text exposition, with the gauges read from storage now.
    pub async fn render(&self) -> Result<String, DomainError> {
        let (stats, open, held_back) =
            self.db.read(|r| Ok((r.outbox_stats()?, r.count_open_conversations()?, r.feed_held_back_since()?))).await?;
        self.inner.queue_depth.set(i64::try_from(stats.pending).unwrap_or(i64::MAX));
        self.inner.open_conversations.set(i64::try_from(open).unwrap_or(i64::MAX));
        let now = self.clock.now();
        self.inner.feed_held_back.set(held_back.map_or(0.0, |since| now.since(since).as_secs_f64()));
        // Counted by the storage where every message is added, after its
        // commit (a repeat that added nothing counts for nothing); taken
        // as they stand, never lowered.
        let created = self.db.messages_created();
        for (sender, count) in [("visitor", created.visitor), ("operator", created.operator), ("system", created.system)] {
            self.inner.messages.get_or_create(&vec![("sender", sender.to_owned())]).inner().fetch_max(count, Ordering::Relaxed);
        }
        let mut text = String::new();
        encode(&mut text, &self.inner.registry).map_err(|_| DomainError::Unavailable("metrics could not be encoded"))?;
        Ok(text)
    }
}
