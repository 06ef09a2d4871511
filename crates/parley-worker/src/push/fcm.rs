//! Firebase Cloud Messaging, HTTP v1: an OAuth2 access token got with the
//! service account's signed assertion (the JWT-bearer grant of RFC 7523)
//! at the account's `token_uri`, kept until shortly before it expires.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use parley_domain::Timestamp;
use parley_domain::push::{Notification, PushOutcome};
use serde_json::{Value, json};

use super::http::{self, Answer};
use super::jwt::{RsaKey, pem_block};

const SCOPE: &str = "https://www.googleapis.com/auth/firebase.messaging";
/// An access token is renewed this long before it expires.
const RENEW_BEFORE: Duration = Duration::from_secs(120);

/// What Parley reads of a service-account file.
#[derive(Clone)]
pub struct ServiceAccount {
    pub project_id: String,
    pub client_email: String,
    pub private_key_id: Option<String>,
    pub key: RsaKey,
    pub token_uri: String,
}

impl ServiceAccount {
    pub fn from_json(text: &str) -> Result<Self, String> {
        let v: Value = serde_json::from_str(text).map_err(|_| "is not a JSON service-account file".to_owned())?;
        let field = |name: &str| -> Result<String, String> {
            v.get(name)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| format!("has no {name:?} (a service-account key file from the Firebase console is expected)"))
        };
        let pem = field("private_key")?;
        let key = RsaKey::from_pkcs8(&pem_block(&pem, "PRIVATE KEY").map_err(|e| format!("private_key {e}"))?)
            .map_err(|e| format!("private_key {e}"))?;
        let token_uri = field("token_uri")?;
        if url::Url::parse(&token_uri).is_err() {
            return Err("has a token_uri that is not a URL".into());
        }
        Ok(Self {
            project_id: field("project_id")?,
            client_email: field("client_email")?,
            private_key_id: field("private_key_id").ok(),
            key,
            token_uri,
        })
    }
}

pub struct Fcm {
    client: reqwest::Client,
    account: ServiceAccount,
    /// `PARLEY_FCM_URL`, without a trailing slash.
    url: String,
    token: Mutex<Option<(String, Instant)>>,
}

impl Fcm {
    pub fn new(client: reqwest::Client, account: ServiceAccount, url: String) -> Self {
        Self { client, account, url, token: Mutex::new(None) }
    }

    async fn access_token(&self, now: Timestamp) -> Result<String, PushOutcome> {
        if let Some((token, until)) = self.token.lock().unwrap_or_else(|p| p.into_inner()).as_ref()
            && Instant::now() < *until
        {
            return Ok(token.clone());
        }
        let a = &self.account;
        let iat = now.unix_seconds();
        let mut header = json!({"alg": "RS256", "typ": "JWT"});
        if let Some(kid) = &a.private_key_id {
            header["kid"] = kid.clone().into();
        }
        let claims = json!({"iss": a.client_email, "scope": SCOPE, "aud": a.token_uri, "iat": iat, "exp": iat + 3600});
        let assertion = a.key.sign(&header, &claims).map_err(|reason| PushOutcome::Retry { after: None, reason })?;
        let request = self
            .client
            .post(&a.token_uri)
            .form(&[("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion.as_str())]);
        match http::send(request, now).await {
            Answer::Status { code: 200, body, .. } => {
                let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let Some(token) = v.get("access_token").and_then(Value::as_str) else {
                    return Err(PushOutcome::Retry { after: None, reason: "the token endpoint answered no access_token".into() });
                };
                let lifetime = Duration::from_secs(v.get("expires_in").and_then(Value::as_u64).unwrap_or(3600));
                let until = Instant::now() + lifetime.saturating_sub(RENEW_BEFORE);
                *self.token.lock().unwrap_or_else(|p| p.into_inner()) = Some((token.to_owned(), until));
                Ok(token.to_owned())
            }
            // Credentials Google refuses stay refused until the operator
            // fixes them; retrying spaces the attempts meanwhile.
            Answer::Status { code, .. } if (400..500).contains(&code) && code != 429 => {
                Err(PushOutcome::Retry { after: None, reason: format!("the token endpoint refused the service account (HTTP {code})") })
            }
            answer => Err(match answer.otherwise() {
                PushOutcome::Retry { after, reason } => PushOutcome::Retry { after, reason: format!("token endpoint: {reason}") },
                other => other,
            }),
        }
    }

    /// `parley check`'s live test: Google's token endpoint takes the
    /// service account and issues an access token. Nothing is pushed.
    pub async fn probe(&self, now: Timestamp) -> Result<String, String> {
        match self.access_token(now).await {
            Ok(_) => Ok("the service account was accepted (an access token was issued)".into()),
            Err(PushOutcome::Retry { reason, .. } | PushOutcome::Rejected { reason } | PushOutcome::DeadToken { reason }) => Err(reason),
            Err(PushOutcome::Delivered) => Ok("the service account was accepted".into()),
        }
    }

    pub async fn send(&self, device_token: &str, n: &Notification, now: Timestamp) -> PushOutcome {
        let token = match self.access_token(now).await {
            Ok(t) => t,
            Err(outcome) => return outcome,
        };
        let tag = n.conversation_id.to_string();
        let mut notification = json!({"title": n.title});
        if let Some(body) = &n.body {
            notification["body"] = body.clone().into();
        }
        // FCM data values are strings.
        let data = json!({
            "conversation_id": n.conversation_id.to_string(),
            "reason": n.reason,
            "badge": n.badge.to_string(),
        });
        let message = json!({"message": {
            "token": device_token,
            "notification": notification,
            "data": data,
            "android": {
                "priority": "high",
                "collapse_key": tag,
                "notification": {"tag": tag, "notification_count": n.badge},
            },
        }});
        let request = self
            .client
            .post(format!("{}/v1/projects/{}/messages:send", self.url, self.account.project_id))
            .bearer_auth(&token)
            .json(&message);
        match http::send(request, now).await {
            Answer::Status { code: 200, .. } => PushOutcome::Delivered,
            Answer::Status { code: 401, .. } => {
                // Unless another push has fetched a new one since.
                let mut held = self.token.lock().unwrap_or_else(|p| p.into_inner());
                if held.as_ref().is_some_and(|(t, _)| *t == token) {
                    *held = None;
                }
                PushOutcome::Retry { after: None, reason: "HTTP 401: the access token was refused".into() }
            }
            // Only FCM's own word: a 404 without it is a wrong project or
            // address, which every device would answer alike.
            Answer::Status { code: code @ (400 | 404), body, .. } if error_code(&body).as_deref() == Some("UNREGISTERED") => {
                PushOutcome::DeadToken { reason: format!("HTTP {code} UNREGISTERED") }
            }
            answer => answer.otherwise(),
        }
    }
}

/// The `errorCode` FCM puts in an error's details (`UNREGISTERED`, …).
fn error_code(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    let details = v.get("error")?.get("details")?.as_array()?;
    details.iter().find_map(|d| d.get("errorCode").and_then(Value::as_str).map(str::to_owned))
}
