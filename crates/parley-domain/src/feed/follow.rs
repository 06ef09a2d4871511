//! Following the feed live: what a stream sends, in order, from the
//! cursor its client brought.
//!
//! A follower watches its hub key before its first read, so an entry
//! committed between a read and the wait still wakes it. A wake-up only
//! says "read again": every entry comes from the feed itself, so a wake-up
//! lost, late or doubled costs a read or a delay, never an entry.

use super::{Cursor, FeedItem, FeedService, PAGE, Reader, hub::Watch};
use crate::auth::SessionGuard;
use crate::error::DomainError;

/// What a follower has for its client next.
#[derive(Debug)]
pub enum Step {
    /// Entries the reader sees, oldest first.
    Items(Vec<FeedItem>),
    /// The client's cursor is unknown or older than the retention: it
    /// must reload and follow from a new one.
    Reset,
}

pub struct Follower {
    feed: FeedService,
    reader: Reader,
    cursor: Cursor,
    /// The client's own cursor has not been checked yet.
    unchecked: bool,
    /// The last read filled a page: read again before waiting.
    more: bool,
    watch: Watch,
    /// Checked in every read, when an operator's token holds the follower.
    guard: Option<SessionGuard>,
}

impl FeedService {
    /// Follows the feed as `reader` from `from` (checked on the first
    /// read), or from the tenant's head when the client brings no cursor.
    pub async fn follow(&self, reader: Reader, from: Option<Cursor>) -> Result<Follower, DomainError> {
        let watch = match reader {
            Reader::Operator(scope) => self.hub().tenant(scope.tenant),
            Reader::Visitor(_, conversation) => self.hub().conversation(conversation),
        };
        let (cursor, unchecked) = match from {
            Some(cursor) => (cursor, true),
            None => (self.head(reader).await?, false),
        };
        Ok(Follower { feed: self.clone(), reader, cursor, unchecked, more: false, watch, guard: None })
    }
}

impl Follower {
    /// Reads only while `guard`'s token holds: a read after it ended is
    /// `Unauthenticated`, and hands out nothing.
    pub fn guarded(mut self, guard: SessionGuard) -> Self {
        self.guard = Some(guard);
        self
    }

    /// The entries committed since the last read that the reader sees;
    /// `None` when there are none yet. After a `Reset` the follower has
    /// nothing more to give.
    pub async fn read(&mut self) -> Result<Option<Step>, DomainError> {
        let page = match self.feed.read(self.reader, self.cursor, self.unchecked, self.guard.clone()).await {
            Err(DomainError::CursorExpired) => return Ok(Some(Step::Reset)),
            page => page?,
        };
        self.unchecked = false;
        self.cursor = page.cursor;
        self.more = page.items.len() >= PAGE as usize;
        Ok((!page.items.is_empty()).then_some(Step::Items(page.items)))
    }

    /// Returns when there may be something to read: at once after a full
    /// page, else when the hub says the feed moved. Safe to cancel.
    pub async fn changed(&mut self) {
        if self.more {
            self.more = false;
            return;
        }
        self.watch.changed().await;
    }

    /// Who follows.
    pub fn reader(&self) -> Reader {
        self.reader
    }

    /// Where the client is: the cursor its next read starts after.
    pub fn cursor(&self) -> Cursor {
        self.cursor
    }
}
