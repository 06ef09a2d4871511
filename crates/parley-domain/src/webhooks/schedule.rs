//! What happens after an attempt: done, retry later, give up, or disable
//! the endpoint.

use std::time::Duration;

use super::NextStep;
use crate::clock::Timestamp;

/// How an attempt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// The endpoint answered with this status (redirects are not followed,
    /// so a 3xx ends here too). `retry_after` is its `Retry-After`, if any.
    Status { code: u16, retry_after: Option<Duration> },
    /// No answer: connection refused, timeout, forbidden address, …
    NoResponse,
}

impl Response {
    /// The HTTP status, when an answer came.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            Self::Status { code, .. } => Some(*code),
            Self::NoResponse => None,
        }
    }
}

/// Longest wait a `Retry-After` can impose.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// Decides the next step after attempt number `attempt` (1 for the first).
/// `jitter` in `[-1, 1]` moves a scheduled delay by up to ±10 %, so that
/// deliveries failing together do not retry together.
pub fn next_step(schedule: &[Duration], attempt: u32, response: &Response, now: Timestamp, jitter: f64) -> NextStep {
    if let Response::Status { code: 200..=299, .. } = response {
        return NextStep::Delivered;
    }
    if let Response::Status { code: 410, .. } = response {
        return NextStep::DisableEndpoint;
    }
    let Some(&planned) = schedule.get(attempt as usize - 1) else {
        return NextStep::Failed;
    };
    let delay = match response {
        Response::Status { code: 429 | 503, retry_after: Some(wait) } => (*wait).clamp(Duration::from_secs(1), MAX_RETRY_AFTER),
        _ => planned.mul_f64(1.0 + 0.1 * jitter.clamp(-1.0, 1.0)),
    };
    NextStep::RetryAt(now.plus(delay))
}

/// Parses `Retry-After`: delay-seconds, or an HTTP date relative to `now`.
pub fn parse_retry_after(value: &str, now: Timestamp) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = time::OffsetDateTime::parse(v, &time::format_description::well_known::Rfc2822).ok()?;
    let ms = i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok()?;
    Some(Timestamp::from_millis(ms).since(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: [Duration; 2] = [Duration::from_secs(5), Duration::from_secs(30)];
    const NOW: Timestamp = Timestamp::from_millis(1_000_000);

    fn status(code: u16) -> Response {
        Response::Status { code, retry_after: None }
    }

    #[test]
    fn success_gone_retry_and_give_up() {
        assert_eq!(next_step(&S, 1, &status(204), NOW, 0.0), NextStep::Delivered);
        assert_eq!(next_step(&S, 1, &status(410), NOW, 0.0), NextStep::DisableEndpoint);
        assert_eq!(next_step(&S, 1, &status(500), NOW, 0.0), NextStep::RetryAt(NOW.plus(Duration::from_secs(5))));
        assert_eq!(next_step(&S, 2, &Response::NoResponse, NOW, 0.0), NextStep::RetryAt(NOW.plus(Duration::from_secs(30))));
        assert_eq!(next_step(&S, 3, &status(500), NOW, 0.0), NextStep::Failed);
        assert_eq!(
            next_step(&S, 1, &status(302), NOW, 0.0),
            NextStep::RetryAt(NOW.plus(Duration::from_secs(5))),
            "a redirect is a failure"
        );
    }

    #[test]
    fn jitter_stays_within_ten_percent() {
        assert_eq!(next_step(&S, 1, &status(500), NOW, 1.0), NextStep::RetryAt(NOW.plus(Duration::from_millis(5500))));
        assert_eq!(next_step(&S, 1, &status(500), NOW, -1.0), NextStep::RetryAt(NOW.plus(Duration::from_millis(4500))));
    }

    #[test]
    fn retry_after_is_honoured_on_429_and_503() {
        let r = Response::Status { code: 429, retry_after: Some(Duration::from_secs(120)) };
        assert_eq!(next_step(&S, 1, &r, NOW, 1.0), NextStep::RetryAt(NOW.plus(Duration::from_secs(120))));
        let r = Response::Status { code: 503, retry_after: Some(Duration::from_secs(0)) };
        assert_eq!(next_step(&S, 1, &r, NOW, 0.0), NextStep::RetryAt(NOW.plus(Duration::from_secs(1))));
        assert_eq!(parse_retry_after("120", NOW), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after("soon", NOW), None);
        assert!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", NOW).is_some());
    }
}
