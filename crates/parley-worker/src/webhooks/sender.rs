//! Sends one delivery: the envelope as recorded, with both signature
//! schemes, to the endpoint; redirects are never followed.

use std::time::Duration;

use parley_domain::Timestamp;
use parley_domain::webhooks::ClaimedDelivery;
use parley_domain::webhooks::schedule::{Response, parse_retry_after};
use parley_domain::webhooks::signing::{service_signature, standard_signature};
use reqwest::header::{CONTENT_TYPE, RETRY_AFTER, USER_AGENT};

use crate::outbound::{self, ip_literal_forbidden};

const USER_AGENT_NAME: &str = concat!("Parley-Webhooks/", env!("CARGO_PKG_VERSION"));

/// How much of a response body is read (and thrown away) so the connection
/// can be reused.
const MAX_BODY_READ: usize = 64 * 1024;

#[derive(Clone)]
pub struct Sender {
    client: reqwest::Client,
    allow_private: bool,
    links: Option<parley_domain::attachments::links::Links>,
}

impl Sender {
    /// `extra_roots`: trusted besides the system's (`PARLEY_EXTRA_CA_FILE`).
    pub fn new(
        timeout: Duration,
        allow_private: bool,
        extra_roots: &[reqwest::Certificate],
        links: Option<parley_domain::attachments::links::Links>,
    ) -> Result<Self, reqwest::Error> {
        let client = outbound::client(timeout, extra_roots, USER_AGENT_NAME, !allow_private).pool_max_idle_per_host(32).build()?;
        Ok(Self { client, allow_private, links })
    }

    /// Makes one attempt. Returns how it ended and, for failures, a short
    /// reason for the delivery log (never the URL, which may hold credentials).
    pub async fn send(&self, c: &ClaimedDelivery, now: Timestamp) -> (Response, Option<String>) {
        if !self.allow_private && ip_literal_forbidden(&c.webhook.url) {
            return (Response::NoResponse, Some("the endpoint address is not allowed".into()));
        }
        let ts = now.unix_seconds();
        // The envelope as recorded, its attachments' links signed now.
        let payload = match &self.links {
            Some(links) => links.in_envelope(&c.payload).into_owned(),
            None => c.payload.clone(),
        };
        let body = payload.as_bytes();
        let secrets = c.webhook.signing_secrets(now);
        let request = self
            .client
            .post(&c.webhook.url)
            .header(CONTENT_TYPE, "application/json")
            .header(USER_AGENT, USER_AGENT_NAME)
            .header("X-Service-Event", c.kind.as_str())
            .header("X-Service-Timestamp", ts.to_string())
            .header("X-Service-Signature", service_signature(&secrets, ts, body))
            .header("webhook-id", c.event_id.as_str())
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", standard_signature(&secrets, &c.event_id, ts, body))
            .body(payload.clone());
        match request.send().await {
            Ok(mut res) => {
                let code = res.status().as_u16();
                let retry_after = res.headers().get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(|v| parse_retry_after(v, now));
                outbound::read_body(&mut res, MAX_BODY_READ).await;
                let error = (!(200..300).contains(&code)).then(|| format!("HTTP {code}"));
                (Response::Status { code, retry_after }, error)
            }
            Err(e) => (Response::NoResponse, Some(describe(&e))),
        }
    }
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "could not connect".into()
    } else {
        let mut text = e.to_string();
        if let Some(url) = e.url() {
            text = text.replace(url.as_str(), "the endpoint");
        }
        text
    }
}
