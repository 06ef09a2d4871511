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
use crate::ids::{parse_radix36, radix36};

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
        let mut parts = s.split('-').map(parse_radix36);
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(Some(tx)), Some(Some(id)), Some(Some(at)), None) => {
                Ok(Self { position: Position { tx, id }, at: Timestamp::from_millis(at) })
            }
            _ => Err(Malformed),
        }
    }
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
