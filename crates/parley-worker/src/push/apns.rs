//! Apple Push Notification service: HTTP/2, token authentication (an
//! ES256 JWT from the team's `.p8` key, made again every 50 minutes;
//! Apple refuses one older than an hour and throttles one made too often).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use parley_domain::Timestamp;
use parley_domain::push::{Notification, PushOutcome};
use serde_json::json;

use super::http::{self, Answer};
use super::jwt::EcKey;

/// How long one provider token is used.
const TOKEN_REUSE: Duration = Duration::from_secs(50 * 60);

#[derive(Clone)]
pub struct ApnsSettings {
    pub key: EcKey,
    pub key_id: String,
    pub team_id: String,
    pub topic: String,
    /// `PARLEY_APNS_URL`, without a trailing slash.
    pub url: String,
}

pub struct Apns {
    client: reqwest::Client,
    settings: ApnsSettings,
    token: Mutex<Option<(String, Instant)>>,
}

impl Apns {
    pub fn new(client: reqwest::Client, settings: ApnsSettings) -> Self {
        Self { client, settings, token: Mutex::new(None) }
    }

    fn token(&self, now: Timestamp) -> Result<String, String> {
        let mut held = self.token.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((token, made)) = held.as_ref()
            && made.elapsed() < TOKEN_REUSE
        {
            return Ok(token.clone());
        }
        let s = &self.settings;
        let token = s.key.sign(&json!({"alg": "ES256", "kid": s.key_id}), &json!({"iss": s.team_id, "iat": now.unix_seconds()}))?;
        *held = Some((token.clone(), Instant::now()));
        Ok(token)
    }

    /// Forgets `refused`, unless another push has made a new one since:
    /// pushes out together must not each throw away the one before (Apple
    /// throttles a team that makes tokens too often).
    fn forget_token(&self, refused: &str) {
        let mut held = self.token.lock().unwrap_or_else(|p| p.into_inner());
        if held.as_ref().is_some_and(|(token, _)| token == refused) {
            *held = None;
        }
    }

    /// `parley check`'s live test: a push to a device token no device
    /// has (all zeros), which Apple answers `BadDeviceToken` once it took
    /// the provider token, and `403` with the reason when it did not.
    /// Whether the topic is the app's shows only with a real device's
    /// token. Nothing reaches any device.
    pub async fn probe(&self, now: Timestamp) -> Result<String, String> {
        let token = self.token(now)?;
        let request = self
            .client
            .post(format!("{}/3/device/{}", self.settings.url, "0".repeat(64)))
            .header("authorization", format!("bearer {token}"))
            .header("apns-topic", &self.settings.topic)
            .header("apns-push-type", "alert")
            .header("apns-expiration", "0")
            .json(&json!({"aps": {"alert": {"title": "Parley check"}}}));
        match http::send(request, now).await {
            Answer::Status { code: 200, .. } => Ok("the key was accepted".into()),
            Answer::Status { code: 400, body, .. } if reason_of(&body) == "BadDeviceToken" => {
                Ok("the key was accepted (a test device token was refused, as it should be)".into())
            }
            Answer::Status { code, body, .. } => Err(format!("Apple refused: HTTP {code} {}", reason_of(&body))),
            Answer::NoResponse(reason) => Err(reason),
        }
    }

    /// `pushed_before`: a push to this device has gone through before.
    pub async fn send(&self, device_token: &str, pushed_before: bool, n: &Notification, now: Timestamp) -> PushOutcome {
        // A token is hex; anything else cannot be a path segment Apple
        // would accept, and must not become one.
        if device_token.is_empty() || !device_token.bytes().all(|b| b.is_ascii_hexdigit()) {
            return PushOutcome::DeadToken { reason: "not an APNs device token".into() };
        }
        let token = match self.token(now) {
            Ok(t) => t,
            Err(reason) => return PushOutcome::Retry { after: None, reason },
        };
        let mut alert = json!({"title": n.title});
        if let Some(body) = &n.body {
            alert["body"] = body.clone().into();
        }
        let payload = json!({
            "aps": {
                "alert": alert,
                "badge": n.badge,
                "sound": "default",
                "thread-id": n.conversation_id.to_string(),
                "mutable-content": 1,
            },
            "conversation_id": n.conversation_id,
            "reason": n.reason,
        });
        let request = self
            .client
            .post(format!("{}/3/device/{device_token}", self.settings.url))
            .header("authorization", format!("bearer {token}"))
            .header("apns-topic", &self.settings.topic)
            .header("apns-push-type", "alert")
            .header("apns-priority", "10")
            .header("apns-expiration", (now.unix_seconds() + 4 * 3600).to_string())
            .header("apns-collapse-id", n.conversation_id.to_string())
            .json(&payload);
        let answer = http::send(request, now).await;
        let reason = match &answer {
            Answer::Status { body, .. } => reason_of(body),
            Answer::NoResponse(_) => String::new(),
        };
        match answer {
            Answer::Status { code: 200, .. } => PushOutcome::Delivered,
            Answer::Status { code: 410, .. } => PushOutcome::DeadToken { reason: format!("HTTP 410 {reason}") },
            // Not `DeviceTokenNotForTopic`: every token answers it when
            // PARLEY_APNS_TOPIC is wrong, and that is no reason to forget
            // every device. `BadDeviceToken` is what every token answers
            // when PARLEY_APNS_URL names the other environment (sandbox
            // or production): dead only for a device that took pushes
            // before, a refusal for one that never did.
            Answer::Status { code: 400, .. } if reason == "Unregistered" || (reason == "BadDeviceToken" && pushed_before) => {
                PushOutcome::DeadToken { reason: format!("HTTP 400 {reason}") }
            }
            // A provider token Apple no longer takes: make a new one and
            // try again.
            Answer::Status { code: 403, .. } if matches!(reason.as_str(), "ExpiredProviderToken" | "InvalidProviderToken") => {
                self.forget_token(&token);
                PushOutcome::Retry { after: None, reason: format!("HTTP 403 {reason}") }
            }
            answer => answer.otherwise(),
        }
    }
}

/// The `reason` of an APNs error body.
fn reason_of(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("reason").and_then(|r| r.as_str()).map(str::to_owned))
        .unwrap_or_default()
}
