//! When a push that failed is tried again.

use std::time::Duration;

use super::PushOutcome;
use crate::clock::Timestamp;

/// Delays after the first, second, … failed attempt. A push is about
/// now: after about an hour it is dropped rather than buzz late.
pub const RETRIES: [Duration; 6] = [
    Duration::from_secs(5),
    Duration::from_secs(15),
    Duration::from_secs(60),
    Duration::from_secs(300),
    Duration::from_secs(900),
    Duration::from_secs(2700),
];

/// The longest `Retry-After` honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// What to do after attempt number `attempt` (1 for the first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushStep {
    Sent,
    RetryAt(Timestamp),
    /// Out of retries, or refused for good.
    GiveUp,
    RemoveDevice,
}

/// `jitter` in `[-1, 1]` moves a scheduled delay by up to ±10 %.
pub fn next_step(attempt: u32, outcome: &PushOutcome, now: Timestamp, jitter: f64) -> PushStep {
    match outcome {
        PushOutcome::Delivered => PushStep::Sent,
        PushOutcome::DeadToken { .. } => PushStep::RemoveDevice,
        PushOutcome::Rejected { .. } => PushStep::GiveUp,
        PushOutcome::Retry { after, .. } => {
            let Some(planned) = RETRIES.get(attempt.saturating_sub(1) as usize) else { return PushStep::GiveUp };
            let delay = match after {
                Some(wait) => (*wait).clamp(Duration::from_secs(1), MAX_RETRY_AFTER),
                None => planned.mul_f64(1.0 + 0.1 * jitter.clamp(-1.0, 1.0)),
            };
            PushStep::RetryAt(now.plus(delay))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Timestamp = Timestamp::from_millis(1_000_000);

    fn retry(after: Option<u64>) -> PushOutcome {
        PushOutcome::Retry { after: after.map(Duration::from_secs), reason: "HTTP 500".into() }
    }

    #[test]
    fn retries_follow_the_schedule_then_give_up() {
        assert_eq!(next_step(1, &retry(None), NOW, 0.0), PushStep::RetryAt(NOW.plus(Duration::from_secs(5))));
        assert_eq!(next_step(2, &retry(None), NOW, 1.0), PushStep::RetryAt(NOW.plus(Duration::from_millis(16_500))));
        assert_eq!(next_step(7, &retry(None), NOW, 0.0), PushStep::GiveUp);
    }

    #[test]
    fn retry_after_wins_within_bounds() {
        assert_eq!(next_step(1, &retry(Some(120)), NOW, 1.0), PushStep::RetryAt(NOW.plus(Duration::from_secs(120))));
        assert_eq!(next_step(1, &retry(Some(0)), NOW, 0.0), PushStep::RetryAt(NOW.plus(Duration::from_secs(1))));
        assert_eq!(next_step(1, &retry(Some(86_400)), NOW, 0.0), PushStep::RetryAt(NOW.plus(MAX_RETRY_AFTER)));
    }

    #[test]
    fn dead_tokens_and_refusals_end_it() {
        assert_eq!(next_step(1, &PushOutcome::Delivered, NOW, 0.0), PushStep::Sent);
        assert_eq!(next_step(1, &PushOutcome::DeadToken { reason: "410".into() }, NOW, 0.0), PushStep::RemoveDevice);
        assert_eq!(next_step(1, &PushOutcome::Rejected { reason: "400".into() }, NOW, 0.0), PushStep::GiveUp);
    }
}
