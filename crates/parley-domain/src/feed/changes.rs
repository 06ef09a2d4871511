//! Which conversations changed, as counters that an answer kept in memory
//! is checked against before it is given again.
//!
//! Each change takes the next number of one sequence and raises the
//! counter of its conversation to it. Changes are counted by this
//! instance's commits (after the commit, before the caller hears of it,
//! so a client reads its own writes) and by the feed follower for every
//! entry it reads (the other instances' commits, on PostgreSQL); an
//! erasure, which leaves no entry naming its conversation, counts as a
//! change of every conversation, here and where it is announced. An
//! answer read from the database after the sequence stood at `n` is the
//! database's answer still while its conversation's counter is at most
//! `n`: a change counted at or before `n` was committed before the read
//! began, so the read saw it.
//!
//! Conversations share counters (a fixed number of them, chosen by id): a
//! change of one sends answers about the others on its counter back to
//! the database, which costs a read and never an answer's truth, and the
//! counters take no memory per conversation.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::model::ConversationId;

/// Counters shared by all conversations: 512 KiB. An answer is kept up to
/// `polls::LIFETIME`, so a busy instance's changes of other conversations
/// must rarely land on its counter within that time.
const COUNTERS: usize = 65_536;

pub struct Changes {
    sequence: AtomicU64,
    /// The number of the last change that may have touched any
    /// conversation (the follower could not read the feed).
    everything: AtomicU64,
    counters: Box<[AtomicU64]>,
}

impl Default for Changes {
    fn default() -> Self {
        Self { sequence: AtomicU64::new(0), everything: AtomicU64::new(0), counters: (0..COUNTERS).map(|_| AtomicU64::new(0)).collect() }
    }
}

impl Changes {
    /// Taken before a read whose answer may be kept.
    pub fn sequence(&self) -> u64 {
        self.sequence.load(Ordering::SeqCst)
    }

    /// These conversations changed (a repeated id costs nothing more).
    pub fn changed(&self, ids: &[ConversationId]) {
        if ids.is_empty() {
            return;
        }
        let n = self.next();
        for id in ids {
            self.counter(*id).fetch_max(n, Ordering::SeqCst);
        }
    }

    /// Any conversation may have changed.
    pub fn everything_changed(&self) {
        let n = self.next();
        self.everything.fetch_max(n, Ordering::SeqCst);
    }

    /// Whether nothing counted since `as_of` may have changed `id`.
    pub fn unchanged_since(&self, id: ConversationId, as_of: u64) -> bool {
        self.everything.load(Ordering::SeqCst) <= as_of && self.counter(id).load(Ordering::SeqCst) <= as_of
    }

    fn next(&self) -> u64 {
        self.sequence.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn counter(&self, id: ConversationId) -> &AtomicU64 {
        // Ids are handed out in order, so the remainder spreads them evenly.
        &self.counters[id.0.rem_euclid(COUNTERS as i64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_after_the_read_began_stales_its_answer_and_one_before_does_not() {
        let changes = Changes::default();
        changes.changed(&[ConversationId(1)]);
        let as_of = changes.sequence();
        assert!(changes.unchanged_since(ConversationId(1), as_of), "counted before the read: the read saw it");
        changes.changed(&[ConversationId(2)]);
        assert!(changes.unchanged_since(ConversationId(1), as_of), "another conversation");
        changes.changed(&[ConversationId(1), ConversationId(1)]);
        assert!(!changes.unchanged_since(ConversationId(1), as_of));
        let later = changes.sequence();
        changes.everything_changed();
        assert!(!changes.unchanged_since(ConversationId(3), later));
    }

    #[test]
    fn conversations_sharing_a_counter_stale_each_other_only() {
        let changes = Changes::default();
        let as_of = changes.sequence();
        changes.changed(&[ConversationId(5)]);
        assert!(!changes.unchanged_since(ConversationId(5 + COUNTERS as i64), as_of));
        assert!(changes.unchanged_since(ConversationId(6), as_of));
        changes.changed(&[]);
        assert_eq!(changes.sequence(), as_of + 1, "nothing changed, nothing counted");
    }
}
