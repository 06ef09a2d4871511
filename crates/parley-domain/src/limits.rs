//! Rate limits.
//!
//! Kept in memory per process (a GCRA bucket per key, from `governor`): the
//! limits protect the service from floods, they are not billing. With
//! several instances each enforces its own share.

use std::hash::Hash;
use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroU32;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::model::{ConversationId, InstallationId};

/// Whom a per-address limit counts: an IPv4 address, or the /64 network of
/// an IPv6 address. One IPv6 subscriber is routed a whole /64 and can pick
/// any address in it, so counting single addresses would count nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClientKey(IpAddr);

impl std::fmt::Display for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl From<IpAddr> for ClientKey {
    fn from(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Self(IpAddr::V4(v4)),
            IpAddr::V6(v6) => {
                let s = v6.segments();
                Self(IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0)))
            }
        }
    }
}

/// `count` events per `period`, written like `120/1m`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub count: u32,
    pub period: Duration,
}

impl FromStr for Rate {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (count, period) = s.split_once('/').ok_or_else(|| format!("{s:?} is not a rate such as 120/1m"))?;
        let count: u32 = count.trim().parse().map_err(|_| format!("{count:?} is not a count"))?;
        let period = parse_duration(period.trim())?;
        if count == 0 || period.is_zero() {
            return Err("a rate needs a positive count and period".into());
        }
        Ok(Rate { count, period })
    }
}

/// Parses `90s`, `15m`, `24h`, `7d` and `250ms`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: u64 = n.parse().map_err(|_| format!("{s:?} is not a duration such as 90s, 15m or 24h"))?;
    let secs = match unit {
        "ms" => return Ok(Duration::from_millis(n)),
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        _ => return Err(format!("{s:?} is not a duration such as 90s, 15m or 24h")),
    };
    Ok(Duration::from_secs(secs))
}

/// Which limits apply; `None` switches a limit off.
#[derive(Clone, Debug)]
pub struct RateLimitSettings {
    /// Widget writes (ping, visitors, conversations, messages) per
    /// installation and client address.
    pub widget_writes: Option<Rate>,
    /// Visitor messages per conversation.
    pub conversation_messages: Option<Rate>,
    /// Failed logins per email.
    pub login_failures_per_email: Option<Rate>,
    /// Failed logins per client address.
    pub login_failures_per_address: Option<Rate>,
    /// Every login (right password or not) per client address: each costs
    /// a password check, whatever its outcome.
    pub logins_per_address: Option<Rate>,
    /// Set-password emails (invitations and links) per tenant: each goes
    /// to an address an admin typed.
    pub password_links_per_tenant: Option<Rate>,
    /// Wrong current passwords per operator, given to change it: a stolen
    /// session must not guess at the machine's speed.
    pub password_guesses: Option<Rate>,
}

impl RateLimitSettings {
    pub fn defaults() -> Self {
        Self {
            widget_writes: Some(Rate { count: 120, period: Duration::from_secs(60) }),
            conversation_messages: Some(Rate { count: 30, period: Duration::from_secs(60) }),
            login_failures_per_email: Some(Rate { count: 5, period: Duration::from_secs(15 * 60) }),
            login_failures_per_address: Some(Rate { count: 20, period: Duration::from_secs(15 * 60) }),
            logins_per_address: Some(Rate { count: 300, period: Duration::from_secs(15 * 60) }),
            password_links_per_tenant: Some(Rate { count: 50, period: Duration::from_secs(3600) }),
            password_guesses: Some(Rate { count: 5, period: Duration::from_secs(15 * 60) }),
        }
    }

    pub fn off() -> Self {
        Self {
            widget_writes: None,
            conversation_messages: None,
            login_failures_per_email: None,
            login_failures_per_address: None,
            logins_per_address: None,
            password_links_per_tenant: None,
            password_guesses: None,
        }
    }
}

struct Limiter<K: Hash + Eq + Clone> {
    inner: DefaultKeyedRateLimiter<K>,
    clock: DefaultClock,
}

impl<K: Hash + Eq + Clone> Limiter<K> {
    fn new(rate: Rate) -> Option<Self> {
        let count = NonZeroU32::new(rate.count)?;
        let quota = Quota::with_period(rate.period / rate.count)?.allow_burst(count);
        Some(Self { inner: DefaultKeyedRateLimiter::keyed(quota), clock: DefaultClock::default() })
    }

    fn check(&self, key: &K) -> Result<(), DomainError> {
        self.inner.check_key(key).map_err(|not_until| DomainError::rate_limited(not_until.wait_time_from(self.clock.now())))
    }
}

pub struct RateLimits {
    widget_writes: Option<Limiter<(InstallationId, ClientKey)>>,
    conversation_messages: Option<Limiter<ConversationId>>,
}

impl RateLimits {
    pub fn new(settings: &RateLimitSettings) -> Self {
        Self {
            widget_writes: settings.widget_writes.and_then(Limiter::new),
            conversation_messages: settings.conversation_messages.and_then(Limiter::new),
        }
    }

    pub fn widget_write(&self, installation: InstallationId, client: ClientKey) -> Result<(), DomainError> {
        self.widget_writes.as_ref().map_or(Ok(()), |l| l.check(&(installation, client)))
    }

    pub fn conversation_message(&self, conversation: ConversationId) -> Result<(), DomainError> {
        self.conversation_messages.as_ref().map_or(Ok(()), |l| l.check(&conversation))
    }

    /// Forgets idle keys so memory stays bounded; called by the sweeper.
    pub fn shrink(&self) {
        if let Some(l) = &self.widget_writes {
            l.inner.retain_recent();
        }
        if let Some(l) = &self.conversation_messages {
            l.inner.retain_recent();
        }
    }
}

/// How long until a key with `count` events in `rate`'s window, the
/// oldest at `oldest`, may have another: `None` while it is under its
/// limit. The rule of every windowed limit, in memory or in the database.
pub(crate) fn refusal(rate: Rate, count: usize, oldest: Option<Timestamp>, now: Timestamp) -> Option<Duration> {
    match oldest {
        Some(oldest) if count >= rate.count as usize => Some(rate.period.saturating_sub(now.since(oldest))),
        _ => None,
    }
}

/// Counts events per key in a sliding window, on the injected clock, with
/// counts that can be taken back: verification starts reserve a count and
/// keep it unless nothing was started (failed sign-ins follow the same
/// rule in the database, `auth::failures`). Each count leaves exactly when it
/// leaves the window. GCRA buckets cannot take a count back, hence this
/// small log.
pub struct SlidingWindow<K: Hash + Eq + Clone> {
    rate: Option<Rate>,
    events: Mutex<HashMap<K, VecDeque<Timestamp>>>,
}

impl<K: Hash + Eq + Clone> SlidingWindow<K> {
    pub fn new(rate: Option<Rate>) -> Self {
        Self { rate, events: Mutex::new(HashMap::new()) }
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<K, VecDeque<Timestamp>>) -> T) -> T {
        match self.events.lock() {
            Ok(mut map) => f(&mut map),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// Counts an event before the work it stands for, refusing it when
    /// `key` already has the allowed number: parallel attempts cannot all
    /// slip under the limit. [`SlidingWindow::forget`] takes it back.
    pub fn reserve(&self, key: &K, now: Timestamp) -> Result<(), DomainError> {
        let Some(rate) = self.rate else { return Ok(()) };
        self.with(|map| {
            let log = map.entry(key.clone()).or_default();
            while log.front().is_some_and(|t| now.since(*t) >= rate.period) {
                log.pop_front();
            }
            match refusal(rate, log.len(), log.front().copied(), now) {
                Some(wait) => Err(DomainError::rate_limited(wait)),
                None => {
                    log.push_back(now);
                    Ok(())
                }
            }
        })
    }

    /// Takes back one reservation made at `at`.
    pub fn forget(&self, key: &K, at: Timestamp) {
        self.with(|map| {
            if let Some(log) = map.get_mut(key)
                && let Some(pos) = log.iter().rposition(|t| *t == at)
            {
                log.remove(pos);
            }
        });
    }

    /// Drops keys whose counts have all left the window.
    pub fn shrink(&self, now: Timestamp) {
        let Some(rate) = self.rate else { return };
        self.with(|map| map.retain(|_, log| log.back().is_some_and(|t| now.since(*t) < rate.period)));
    }
}

/// At most `most` pieces of work at a time per key: a client past its
/// share is refused, so no single client holds all of a scarce resource
/// (a password-check slot, open streams).
pub struct PerKeyLimit<K: Hash + Eq + Clone> {
    most: usize,
    /// What a refused client is told to wait, in seconds.
    retry_after_secs: u64,
    held: Arc<Mutex<HashMap<K, usize>>>,
}

/// Holds one of a key's places; dropping it frees the place.
pub struct Held<K: Hash + Eq + Clone> {
    held: Arc<Mutex<HashMap<K, usize>>>,
    key: K,
}

impl<K: Hash + Eq + Clone> PerKeyLimit<K> {
    pub fn new(most: usize, retry_after_secs: u64) -> Self {
        Self { most, retry_after_secs, held: Arc::new(Mutex::new(HashMap::new())) }
    }

    /// A place for `key`, or `RateLimited` while it holds its share.
    pub fn take(&self, key: &K) -> Result<Held<K>, DomainError> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let count = held.entry(key.clone()).or_insert(0);
        if *count >= self.most {
            if *count == 0 {
                held.remove(key);
            }
            return Err(DomainError::RateLimited { retry_after_secs: self.retry_after_secs });
        }
        *count += 1;
        Ok(Held { held: Arc::clone(&self.held), key: key.clone() })
    }
}

impl<K: Hash + Eq + Clone> Drop for Held<K> {
    fn drop(&mut self) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = held.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_clients_are_keyed_by_their_64() {
        let key = |s: &str| ClientKey::from(s.parse::<IpAddr>().unwrap());
        assert_eq!(key("2001:db8:1:2:aaaa::1"), key("2001:db8:1:2:ffff:ffff:ffff:ffff"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:192.0.2.7"), key("192.0.2.7"), "a mapped IPv4 address is that address");
        assert_ne!(key("192.0.2.7"), key("192.0.2.8"));
    }

    #[test]
    fn one_turn_per_key_at_a_time() {
        let turns = PerKeyLimit::new(1, 1);
        let first = turns.take(&"a").unwrap();
        assert!(matches!(turns.take(&"a"), Err(DomainError::RateLimited { retry_after_secs: 1 })));
        assert!(turns.take(&"b").is_ok());
        drop(first);
        assert!(turns.take(&"a").is_ok());
    }

    #[test]
    fn parses_rates_and_durations() {
        assert_eq!("120/1m".parse::<Rate>().unwrap(), Rate { count: 120, period: Duration::from_secs(60) });
        assert_eq!(parse_duration("24h").unwrap(), Duration::from_secs(86_400));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        for bad in ["", "10", "m", "1.5h", "-1s", "10 s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!("0/1m".parse::<Rate>().is_err());
    }

    #[test]
    fn sliding_windows_forget_each_count_when_it_leaves_the_window() {
        let w = SlidingWindow::new(Some(Rate { count: 2, period: Duration::from_secs(900) }));
        let t0 = Timestamp::from_millis(0);
        assert!(w.reserve(&"a", t0).is_ok());
        assert!(w.reserve(&"a", t0.plus(Duration::from_secs(60))).is_ok());
        match w.reserve(&"a", t0.plus(Duration::from_secs(120))) {
            Err(DomainError::RateLimited { retry_after_secs }) => assert_eq!(retry_after_secs, 780),
            other => panic!("{other:?}"),
        }
        assert!(w.reserve(&"b", t0).is_ok(), "other keys are unaffected");
        w.forget(&"b", t0);
        assert!(w.reserve(&"a", t0.plus(Duration::from_secs(900))).is_ok(), "the first failure has left the window");
        w.shrink(t0.plus(Duration::from_secs(10_000)));
    }

    #[test]
    fn refuses_after_the_burst_with_a_retry_time() {
        let limits = RateLimits::new(&RateLimitSettings {
            login_failures_per_email: None,
            login_failures_per_address: None,
            logins_per_address: None,
            widget_writes: None,
            conversation_messages: Some(Rate { count: 2, period: Duration::from_secs(3600) }),
            ..RateLimitSettings::off()
        });
        let c = ConversationId(1);
        assert!(limits.conversation_message(c).is_ok());
        assert!(limits.conversation_message(c).is_ok());
        match limits.conversation_message(c) {
            Err(DomainError::RateLimited { retry_after_secs }) => assert!(retry_after_secs > 0),
            other => panic!("{other:?}"),
        }
        assert!(limits.conversation_message(ConversationId(2)).is_ok());
    }
}
