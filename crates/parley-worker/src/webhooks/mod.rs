//! Webhook delivery: a worker that claims due deliveries with a lease,
//! sends them signed to the checked addresses only, and records every
//! attempt.

mod sender;
mod worker;

use std::time::Duration;

pub use sender::Sender;
pub use worker::WebhookWorker;

#[derive(Clone, Debug)]
pub struct DeliverySettings {
    /// Delays between attempts (`PARLEY_WEBHOOK_RETRY_SCHEDULE`).
    pub schedule: Vec<Duration>,
    /// An attempt without a complete answer by then has failed.
    pub timeout: Duration,
    /// How long a claimed delivery stays with its worker; a worker that dies
    /// loses its claims when their leases run out.
    pub lease: Duration,
    /// How often the worker looks for due retries when nothing wakes it.
    pub poll_interval: Duration,
    /// Attempts in flight at once, in all.
    pub concurrency: usize,
    /// Attempts in flight at once to one endpoint.
    pub per_endpoint: usize,
    /// `PARLEY_WEBHOOK_ALLOW_PRIVATE`.
    pub allow_private: bool,
    /// How long attempts in flight may finish once shutdown begins.
    pub shutdown_grace: Duration,
    /// Trusted besides the system's roots (`PARLEY_EXTRA_CA_FILE`).
    pub extra_roots: Vec<reqwest::Certificate>,
    /// Signs the links to a message's attachments at each attempt.
    pub links: Option<parley_domain::attachments::links::Links>,
}

impl DeliverySettings {
    pub fn new(schedule: Vec<Duration>, allow_private: bool) -> Self {
        Self {
            schedule,
            timeout: Duration::from_secs(10),
            lease: Duration::from_secs(60),
            poll_interval: Duration::from_secs(1),
            concurrency: 128,
            per_endpoint: 16,
            allow_private,
            shutdown_grace: Duration::from_secs(15),
            extra_roots: Vec::new(),
            links: None,
        }
    }
}
