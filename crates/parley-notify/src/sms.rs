//! SMS through an HTTP gateway: `POST {"to", "body"}` as JSON with the
//! gateway's bearer token; any 2xx means accepted.

use std::time::Duration;

use parley_domain::model::TenantId;
use parley_domain::verification::channels::{Provider, SendError, SendFuture, Sms, SmsSender};

pub struct SmsGateway {
    client: reqwest::Client,
    url: url::Url,
    /// `PARLEY_SMS_GATEWAY_TOKEN`; never logged.
    token: Option<String>,
}

impl SmsGateway {
    pub fn new(url: url::Url, token: Option<String>) -> Result<Self, String> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("could not build the SMS client: {e}"))?;
        Ok(Self { client, url, token })
    }

    /// `parley check`'s live test, which must not send an SMS: a `GET` of
    /// the gateway's address with its token. Any answer shows the gateway
    /// is reached; 401 or 403 says it refused the token, and a 5xx that
    /// it is failing. What a `GET` of a `POST` address answers otherwise
    /// (405, 404, 200) says nothing more, and is shown as it is; a
    /// redirect fails, since a send does not follow one.
    pub async fn probe(&self) -> Result<String, String> {
        let mut request = self.client.get(self.url.clone());
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        match request.send().await {
            Ok(res) => match res.status().as_u16() {
                code @ (401 | 403) => Err(format!("the gateway refused the token (HTTP {code})")),
                code @ 300..=399 => {
                    Err(format!("the gateway redirects (HTTP {code}), which a send does not follow: use the address it redirects to"))
                }
                code @ 500..=599 => Err(format!("the gateway is failing (HTTP {code})")),
                code => Ok(format!("reached (HTTP {code} to a GET; no SMS sent)")),
            },
            Err(e) if e.is_timeout() => Err("the gateway timed out".into()),
            // Without its URL: the error would quote it as sent, query
            // credentials and all.
            Err(e) => Err(format!("could not reach the gateway: {}", error_chain(&e.without_url()))),
        }
    }
}

/// An error with its causes, which say why a connection failed (refused,
/// a certificate not trusted).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl SmsSender for SmsGateway {
    fn provider(&self) -> Provider {
        Provider::SmsGateway
    }

    fn send(&self, _tenant: TenantId, sms: Sms) -> SendFuture<'_> {
        Box::pin(async move {
            let mut request = self.client.post(self.url.clone()).json(&serde_json::json!({ "to": sms.to, "body": sms.body }));
            if let Some(token) = &self.token {
                request = request.bearer_auth(token);
            }
            match request.send().await {
                Ok(res) if res.status().is_success() => Ok(()),
                Ok(res) => {
                    let status = res.status();
                    let reason = format!("the SMS gateway answered {}", status.as_u16());
                    // The answers that refuse this message's number for
                    // good; any other (the gateway's own access, its
                    // credit, its limits, an outage) is the service's
                    // problem, not the number's.
                    let refused = matches!(status.as_u16(), 400 | 422);
                    Err(if refused { SendError::permanent(reason) } else { SendError::transient(reason) })
                }
                Err(e) if e.is_timeout() => Err(SendError::transient("the SMS gateway timed out")),
                Err(_) => Err(SendError::transient("could not reach the SMS gateway")),
            }
        })
    }
}
