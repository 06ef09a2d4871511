//! One request to a provider and what came back, read the same way for
//! every provider.

use std::time::Duration;

use parley_domain::Timestamp;
use parley_domain::push::PushOutcome;
use parley_domain::webhooks::schedule::parse_retry_after;
use reqwest::header::RETRY_AFTER;

/// How much of an answer is kept (error bodies are short JSON).
const MAX_BODY: usize = 16 * 1024;

pub enum Answer {
    Status {
        code: u16,
        retry_after: Option<Duration>,
        body: String,
    },
    /// No answer: the reason, never the URL (a browser's endpoint is a
    /// token).
    NoResponse(String),
}

pub async fn send(request: reqwest::RequestBuilder, now: Timestamp) -> Answer {
    match request.send().await {
        Ok(mut res) => {
            let code = res.status().as_u16();
            let retry_after = res.headers().get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(|v| parse_retry_after(v, now));
            let body = crate::outbound::read_body(&mut res, MAX_BODY).await;
            Answer::Status { code, retry_after, body: String::from_utf8_lossy(&body).into_owned() }
        }
        Err(e) => Answer::NoResponse(describe(&e)),
    }
}

impl Answer {
    /// What an answer no provider rule took means: no answer, 429 and
    /// 5xx are tried again; another refusal is final.
    pub fn otherwise(self) -> PushOutcome {
        match self {
            Answer::NoResponse(reason) => PushOutcome::Retry { after: None, reason },
            Answer::Status { code: code @ (429 | 500..=599), retry_after, .. } => {
                PushOutcome::Retry { after: retry_after, reason: format!("HTTP {code}") }
            }
            Answer::Status { code, body, .. } => PushOutcome::Rejected { reason: format!("HTTP {code}: {}", short(&body)) },
        }
    }
}

/// The start of a provider's answer for the log, control characters
/// (a hostile endpoint's line breaks) replaced.
fn short(body: &str) -> String {
    body.chars().take(200).map(|c| if c.is_control() { ' ' } else { c }).collect()
}

fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    // The error's text may hold the URL (a browser endpoint, a device
    // token in an APNs path): only its kind is kept.
    kind.to_owned()
}
