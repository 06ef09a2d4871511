//! The cursor a client holds: an entry's position and when the entry
//! happened, as one opaque string.
//!
//! The time lets a cursor older than the retention be told from one the
//! feed still serves without looking for its entry; the position is
//! checked against the feed (an entry that is gone, or never was, makes
//! the cursor unknown). A cursor issued before any entry existed names
//! the start of the feed and the time it was issued.

use std::fmt;
use std::str::FromStr;

use super::Position;
use crate::clock::Timestamp;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub position: Position,
    pub at: Timestamp,
}

impl Cursor {
    /// The start of the feed, issued at `at`.
    pub fn start(at: Timestamp) -> Self {
        Self { position: Position::START, at }
    }

    pub fn is_start(&self) -> bool {
        self.position == Position::START
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", radix36(self.position.tx), radix36(self.position.id), radix36(self.at.as_millis()))
    }
}

/// Not a cursor this service issued.
#[derive(Debug, PartialEq, Eq)]
pub struct Malformed;

impl FromStr for Cursor {
    type Err = Malformed;

    fn from_str(s: &str) -> Result<Self, Malformed> {
        // At most 12 digits a part: 36^12 is past any id, transaction id
        // or time in milliseconds, and below i64::MAX.
        let mut parts = s.split('-').map(|p| {
            let digits = !p.is_empty() && p.len() <= 12 && p.bytes().all(|b| b.is_ascii_digit() || b.is_ascii_lowercase());
            digits.then(|| i64::from_str_radix(p, 36).ok()).flatten()
        });
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(Some(tx)), Some(Some(id)), Some(Some(at)), None) => {
                Ok(Self { position: Position { tx, id }, at: Timestamp::from_millis(at) })
            }
            _ => Err(Malformed),
        }
    }
}

fn radix36(mut n: i64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n <= 0 {
        return "0".into();
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The largest number of 12 base-36 digits.
    const LARGEST: i64 = 36_i64.pow(12) - 1;

    #[test]
    fn cursors_read_back_as_written() {
        for c in [
            Cursor::start(Timestamp::from_millis(1_763_000_000_000)),
            Cursor { position: Position { tx: 751, id: 12_345 }, at: Timestamp::from_millis(1) },
            Cursor { position: Position { tx: LARGEST, id: LARGEST }, at: Timestamp::from_millis(LARGEST) },
        ] {
            assert_eq!(c.to_string().parse::<Cursor>(), Ok(c), "{c}");
        }
    }

    #[test]
    fn anything_else_is_malformed() {
        for s in ["", "1-2", "1-2-3-4", "a-b-", "-1-2-3", "1--2-3", "+1-2-3", "1-2-zzzzzzzzzzzzz", "1-2-A", "1.2.3", "1-2-3\n", "é-1-1"] {
            assert_eq!(s.parse::<Cursor>(), Err(Malformed), "{s:?}");
        }
    }
}
