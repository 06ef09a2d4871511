//! A relay: for app publishers who keep the store credentials themselves.
//! Parley posts the minimal payload and the device's token, signed like a
//! webhook (the same headers and both signature schemes) with
//! `PARLEY_PUSH_RELAY_SECRET`; the relay answers 2xx when it has taken
//! the push and 410 when the token is dead.

use parley_domain::Timestamp;
use parley_domain::push::{Notification, PushOutcome, PushTarget};
use parley_domain::webhooks::signing::{service_signature, standard_signature};
use serde_json::json;

use super::http::{self, Answer};

pub struct Relay {
    client: reqwest::Client,
    url: String,
    secret: String,
}

impl Relay {
    pub fn new(client: reqwest::Client, url: String, secret: String) -> Self {
        Self { client, url, secret }
    }

    /// `parley check`'s live test, which must not push: a `GET` of the
    /// relay's address. Any answer but a 5xx shows it is reached (a relay
    /// judges a push by its signature, which a `GET` does not carry).
    pub async fn probe(&self, now: Timestamp) -> Result<String, String> {
        match http::send(self.client.get(&self.url), now).await {
            Answer::Status { code: code @ 500..=599, .. } => Err(format!("the relay is failing (HTTP {code})")),
            Answer::Status { code: code @ 300..=399, .. } => {
                Err(format!("the relay redirects (HTTP {code}), which a push does not follow: use the address it redirects to"))
            }
            Answer::Status { code, .. } => Ok(format!("reached (HTTP {code} to a GET; nothing pushed)")),
            Answer::NoResponse(reason) => Err(reason),
        }
    }

    /// `id` names the push (its row and revision): the same on every
    /// attempt, so a relay can tell a retry from a new push.
    pub async fn send(&self, id: &str, target: &PushTarget, n: &Notification, now: Timestamp) -> PushOutcome {
        let body = json!({
            "type": "operator.push",
            "platform": target.platform.as_str(),
            "push_token": target.token,
            "app_id": target.app_id,
            "locale": target.locale,
            "notification": n.data(),
        })
        .to_string();
        let ts = now.unix_seconds();
        let secrets = [self.secret.as_str()];
        let request = self
            .client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("X-Service-Event", "operator.push")
            .header("X-Service-Timestamp", ts.to_string())
            .header("X-Service-Signature", service_signature(&secrets, ts, body.as_bytes()))
            .header("webhook-id", id)
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", standard_signature(&secrets, id, ts, body.as_bytes()))
            .body(body);
        match http::send(request, now).await {
            Answer::Status { code: 200..=299, .. } => PushOutcome::Delivered,
            Answer::Status { code: 410, .. } => PushOutcome::DeadToken { reason: "HTTP 410 from the relay".into() },
            answer => answer.otherwise(),
        }
    }
}
