//! Answers a visitor's poll that is already up to date from memory.
//!
//! A widget without its stream asks for the messages after the latest it
//! has, again and again, and almost always hears "none". That answer
//! (the conversation as it stands, no messages, the cursor) is kept per
//! conversation and given again without a database read for as long as
//! [`Changes`] says nothing about the conversation was committed since
//! the read that produced it, and at most [`LIFETIME`].
//!
//! It can delay a message, never skip one: a poll answered from here asks
//! again, and the first poll after the change is counted reads the
//! database. Changes are counted on this instance's commits before their
//! callers hear of them and on the other instances' (PostgreSQL) as soon as
//! this instance's feed follower reads them; what is changed without a
//! feed entry (an erasure on another instance) is bounded by
//! [`LIFETIME`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::Cursor;
use super::changes::Changes;
use crate::clock::Timestamp;
use crate::model::{Conversation, Message, MessageId, SiteScope};

/// The longest an answer is given again without a read. Longer than a
/// polling widget's pace (every 3 s while its panel is open, 20 s while
/// it is hidden or closed): shorter, the answer would be gone by the next
/// poll, and every poll would read. Changes are counted well before it:
/// this instance's at commit, other instances' as the follower reads
/// them (every 500 ms at the latest), and while the follower cannot read
/// or is held back over a second every answer is dropped. It bounds what
/// no count reaches: a cleared verification or an erasure on another
/// instance whose announcement is lost.
pub const LIFETIME: Duration = Duration::from_secs(30);
/// Answers kept at most: each a conversation's row, some 250 bytes and
/// its subject, so about 20 MB once as many widgets have polled; past
/// it, answers no longer fresh are dropped first.
const MOST: usize = 50_000;

pub struct Polls {
    changes: Arc<Changes>,
    /// By the conversation's public id, which the poll names.
    answers: Mutex<HashMap<String, Answer>>,
}

struct Answer {
    scope: SiteScope,
    conversation: Conversation,
    /// Any `after_id` from this one on is answered with no messages.
    empty_from: i64,
    cursor: Cursor,
    /// The sequence of [`Changes`] when the read began.
    as_of: u64,
    read_at: Timestamp,
}

impl Answer {
    fn fresh(&self, now: Timestamp) -> bool {
        now >= self.read_at && now.since(self.read_at) < LIFETIME
    }
}

/// What a poll read from the database, to be kept if it can be given again.
pub struct Read<'a> {
    /// [`Polls::begin`], taken before the read.
    pub as_of: u64,
    pub scope: SiteScope,
    pub conversation: &'a Conversation,
    pub after_id: Option<MessageId>,
    pub messages: &'a [Message],
    /// The most messages the read could return.
    pub limit: u32,
    pub cursor: Cursor,
    pub now: Timestamp,
}

impl Polls {
    pub fn new(changes: Arc<Changes>) -> Self {
        Self { changes, answers: Mutex::new(HashMap::new()) }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Answer>> {
        self.answers.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The answer to a poll of `public_id` after `after_id` in `scope`
    /// without reading, if one is known to hold: the conversation and the
    /// cursor (there are no messages).
    pub fn answer(&self, scope: SiteScope, public_id: &str, after_id: MessageId, now: Timestamp) -> Option<(Conversation, Cursor)> {
        let mut answers = self.lock();
        let a = answers.get(public_id)?;
        if a.scope != scope || after_id.0 < a.empty_from {
            return None;
        }
        if !a.fresh(now) || !self.changes.unchanged_since(a.conversation.id, a.as_of) {
            // It will not hold again: the read that follows keeps a new one.
            answers.remove(public_id);
            return None;
        }
        Some((a.conversation.clone(), a.cursor))
    }

    /// Taken before a read whose answer may be kept.
    pub fn begin(&self) -> u64 {
        self.changes.sequence()
    }

    /// Keeps what a read found when it tells which polls have no messages
    /// to answer: a page that stops short of its limit (or the latest
    /// page) ends at the conversation's last message. A read that does not
    /// tell drops what was kept: an answer older than the database's
    /// latest is never given after it.
    pub fn remember(&self, read: Read<'_>) {
        let empty_from = match (read.after_id, read.messages.last()) {
            (None, Some(last)) => last.id.0,
            (Some(_), Some(last)) if read.messages.len() < read.limit as usize => last.id.0,
            (Some(after), None) => after.0,
            (None, None) => i64::MIN,
            (Some(_), Some(_)) => return self.forget(&read.conversation.public_id),
        };
        let answer = Answer {
            scope: read.scope,
            conversation: read.conversation.clone(),
            empty_from,
            cursor: read.cursor,
            as_of: read.as_of,
            read_at: read.now,
        };
        let mut answers = self.lock();
        if answers.get(&read.conversation.public_id).is_some_and(|kept| kept.as_of > read.as_of) {
            // A read that began later has answered already.
            return;
        }
        if answers.len() >= MOST && !answers.contains_key(&read.conversation.public_id) {
            answers.retain(|_, a| a.fresh(read.now));
            if answers.len() >= MOST * 3 / 4 {
                // Mostly fresh: more conversations poll than are kept.
                // Starting over costs each of them one read.
                answers.clear();
            }
        }
        answers.insert(read.conversation.public_id.clone(), answer);
    }

    /// Drops what was kept about `public_id` (the database no longer has
    /// it for the caller).
    pub fn forget(&self, public_id: &str) {
        self.lock().remove(public_id);
    }
}
