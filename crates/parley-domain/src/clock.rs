//! Time as the domain sees it.
//!
//! Every rule that depends on time (expiry, staleness, auto-close, token
//! lifetimes) reads the time from an injected [`Clock`], so tests move time
//! forward instead of sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde::{Serialize, Serializer};
use time::OffsetDateTime;

/// Milliseconds since the Unix epoch, UTC. Stored as an integer in every
/// backend so SQLite and PostgreSQL keep identical values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    pub const fn from_millis(ms: i64) -> Self {
        Self(ms)
    }

    pub const fn as_millis(self) -> i64 {
        self.0
    }

    pub fn plus(self, d: Duration) -> Self {
        Self(self.0.saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)))
    }

    pub fn minus(self, d: Duration) -> Self {
        Self(self.0.saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)))
    }

    /// Time elapsed from `earlier` to `self`, zero when `earlier` is later.
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(u64::try_from(self.0.saturating_sub(earlier.0)).unwrap_or(0))
    }

    /// ISO 8601 / RFC 3339 in UTC, always with three fractional digits
    /// (`2026-01-01T00:00:00.000Z`), so the strings also sort by time.
    pub fn to_rfc3339(self) -> String {
        self.rfc3339().as_str().to_owned()
    }

    /// The same text on the stack: every timestamp of every response is
    /// written this way, without an allocation of its own.
    pub fn rfc3339(self) -> Rfc3339 {
        let nanos = i128::from(self.0) * 1_000_000;
        let t = OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap_or(OffsetDateTime::UNIX_EPOCH);
        let mut out = Rfc3339(*b"0000-00-00T00:00:00.000Z");
        // Years outside 0..=9999 have no four-digit form; they cannot come
        // from the clock, and read as the epoch's year rather than garble.
        let year = u32::try_from(t.year()).ok().filter(|y| *y <= 9999).unwrap_or(1970);
        let fields = [
            (0, 4, year),
            (5, 2, u32::from(u8::from(t.month()))),
            (8, 2, u32::from(t.day())),
            (11, 2, u32::from(t.hour())),
            (14, 2, u32::from(t.minute())),
            (17, 2, u32::from(t.second())),
            (20, 3, u32::from(t.millisecond())),
        ];
        for (start, width, mut value) in fields {
            for i in (start..start + width).rev() {
                // A digit: `value % 10` is below 10.
                out.0[i] = b'0' + (value % 10) as u8;
                value /= 10;
            }
        }
        out
    }

    pub fn unix_seconds(self) -> i64 {
        self.0.div_euclid(1000)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.rfc3339().as_str())
    }
}

/// A timestamp's RFC 3339 text, held on the stack.
#[derive(Clone, Copy)]
pub struct Rfc3339([u8; 24]);

impl Rfc3339 {
    pub fn as_str(&self) -> &str {
        // Only ASCII digits and separators are ever written.
        std::str::from_utf8(&self.0).unwrap_or("1970-01-01T00:00:00.000Z")
    }
}

pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let nanos = OffsetDateTime::now_utc().unix_timestamp_nanos();
        Timestamp(i64::try_from(nanos / 1_000_000).unwrap_or(i64::MAX))
    }
}

/// A clock that only moves when told to; shared by tests and the server they
/// drive so expiry rules can be checked without waiting.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(start: Timestamp) -> Arc<Self> {
        Arc::new(Self(AtomicI64::new(start.0)))
    }

    pub fn advance(&self, d: Duration) {
        let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    pub fn set(&self, t: Timestamp) {
        self.0.store(t.0, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_with_milliseconds() {
        assert_eq!(Timestamp::from_millis(0).to_rfc3339(), "1970-01-01T00:00:00.000Z");
        assert_eq!(Timestamp::from_millis(1_700_000_000_123).to_rfc3339(), "2023-11-14T22:13:20.123Z");
        assert_eq!(Timestamp::from_millis(253_402_300_799_999).to_rfc3339(), "9999-12-31T23:59:59.999Z");
        assert_eq!(Timestamp::from_millis(-1).to_rfc3339(), "1969-12-31T23:59:59.999Z");
    }
}
