//! Reading the feed for clients: where a client starts, whether the
//! cursor it brings back is still served, and the entries after it in the
//! client's own scope (an operator's sites, a visitor's conversation).
//!
//! An operator's cursor is a position in its tenant's feed. A visitor's
//! is the position of the last entry of its own conversation it sees,
//! sealed (`seal`): it moves only when something the visitor sees
//! happens, and shows nothing of the rest of the tenant.

use std::sync::Arc;
use std::time::Duration;

use super::{Cursor, CursorSeal, FeedItem, Hub};
use crate::auth::SessionGuard;
use crate::clock::{Clock, Timestamp};
use crate::error::DomainError;
use crate::model::{ConversationId, ConversationScope, SiteScope, TenantId};
use crate::store::{Database, ReadTx, StoreResult};

/// Entries one read returns at most.
pub const PAGE: u32 = 100;

#[derive(Clone, Debug)]
pub struct FeedSettings {
    /// How long entries are kept (`PARLEY_EVENT_RETENTION`): an older
    /// cursor is no longer served.
    pub retention: Duration,
}

#[derive(Clone)]
pub struct FeedService {
    db: Database,
    clock: Arc<dyn Clock>,
    hub: Arc<Hub>,
    settings: FeedSettings,
    seal: CursorSeal,
}

/// What an operator's catch-up answers: the entries, and the cursor to
/// ask from next.
pub struct Catchup {
    pub items: Vec<FeedItem>,
    pub cursor: Cursor,
}

/// Who reads, and what of the feed they see.
#[derive(Clone, Copy, Debug)]
pub enum Reader {
    /// An operator: every conversation of its scope, notes included.
    Operator(ConversationScope),
    /// A visitor: its conversation, what the visitor sees of it.
    Visitor(SiteScope, ConversationId),
}

impl Reader {
    pub fn tenant(&self) -> TenantId {
        match self {
            Reader::Operator(scope) => scope.tenant,
            Reader::Visitor(scope, _) => scope.tenant,
        }
    }

    /// The reader's last readable entry: the tenant's for an operator,
    /// the last one of its conversation it sees for a visitor.
    fn last_entry(&self, r: &mut dyn ReadTx) -> StoreResult<Option<(super::Position, Timestamp)>> {
        match *self {
            Reader::Operator(scope) => r.feed_head(scope.tenant),
            Reader::Visitor(scope, conversation) => r.visitor_feed_head(scope.tenant, conversation),
        }
    }
}

/// The reader's position as of this read, inside any unit that reads what
/// a client then shows (see [`FeedService::head`]).
pub(crate) fn head(r: &mut dyn ReadTx, reader: Reader, now: Timestamp) -> StoreResult<Cursor> {
    Ok(reader.last_entry(r)?.map_or(Cursor::start(now), |(position, at)| Cursor { position, at }))
}

impl FeedService {
    pub fn new(db: Database, clock: Arc<dyn Clock>, hub: Arc<Hub>, settings: FeedSettings, seal: CursorSeal) -> Self {
        Self { db, clock, hub, settings, seal }
    }

    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// The reader's position as of now: a client that has just read what
    /// it shows follows from here and misses nothing committed after.
    pub async fn head(&self, reader: Reader) -> Result<Cursor, DomainError> {
        let now = self.clock.now();
        self.db.read(move |r| Ok(head(r, reader, now)?)).await
    }

    /// The text a client of `reader` holds for `cursor`.
    pub fn cursor_text(&self, reader: Reader, cursor: Cursor) -> String {
        match reader {
            Reader::Operator(_) => cursor.to_string(),
            Reader::Visitor(_, conversation) => self.visitor_cursor_text(conversation, cursor),
        }
    }

    /// The text the visitor of `conversation` holds for `cursor`: sealed.
    pub fn visitor_cursor_text(&self, conversation: ConversationId, cursor: Cursor) -> String {
        self.seal.seal(conversation, cursor)
    }

    /// The cursor inside a text a client of `reader` brought back, if
    /// this service gave it to such a client.
    pub fn parse_cursor(&self, reader: Reader, text: &str) -> Option<Cursor> {
        match reader {
            Reader::Operator(_) => text.parse().ok(),
            Reader::Visitor(_, conversation) => self.seal.open(conversation, text),
        }
    }

    /// Whether a cursor of this age may still be served: younger than
    /// the retention, and not from the future (a forged or skewed one).
    fn in_retention(&self, cursor: Cursor) -> bool {
        let now = self.clock.now();
        cursor.at >= now.minus(self.settings.retention) && cursor.at <= now.plus(Duration::from_secs(300))
    }

    /// The entries after `after` that `reader` sees, oldest first, at most
    /// [`PAGE`], and the cursor to read from next. When fewer than a page
    /// came, an operator's cursor moves to the tenant's head as read
    /// before them: every entry up to it was readable, so those the
    /// reader does not see are not scanned again. A visitor's stays at
    /// the last entry it saw. With `check`, a cursor the feed no longer
    /// holds (or never held for this tenant) is `CursorExpired`, found in
    /// the same unit as the entries.
    ///
    /// A cursor at the reader's last entry is served whatever its age: a
    /// quiet tenant's or conversation's newest entry may be older than
    /// the retention, and a client that has just been given that cursor
    /// has missed nothing.
    ///
    /// With `guard`, the operator's token is checked in the same snapshot
    /// as the entries (see `auth::SessionGuard`): `Unauthenticated` once
    /// it no longer holds.
    pub async fn read(&self, reader: Reader, after: Cursor, check: bool, guard: Option<SessionGuard>) -> Result<Catchup, DomainError> {
        let fresh = self.in_retention(after);
        let tenant = reader.tenant();
        let from = after.position;
        let now = self.clock.now();
        let (head, items) = self
            .db
            .read(move |r| {
                if let Some(guard) = &guard
                    && !guard.holds(r, now)?
                {
                    return Err(DomainError::Unauthenticated);
                }
                let head = reader.last_entry(r)?;
                if check {
                    let at_head = head.is_some_and(|(position, at)| position == from && at == after.at);
                    if !fresh && !at_head {
                        return Err(DomainError::CursorExpired);
                    }
                    if !after.is_start() && !at_head && r.feed_entry_at(tenant, from)? != Some(after.at) {
                        return Err(DomainError::CursorExpired);
                    }
                }
                let items = match reader {
                    Reader::Operator(scope) => r.feed_after(scope, from, false, PAGE)?,
                    Reader::Visitor(scope, conversation) => r.conversation_feed_after(scope.into(), conversation, from, true, PAGE)?,
                };
                Ok((head, items))
            })
            .await?;
        let mut cursor = items.last().map_or(after, FeedItem::cursor);
        if let Reader::Operator(_) = reader
            && items.len() < PAGE as usize
            && let Some((position, at)) = head
            && position > cursor.position
        {
            cursor = Cursor { position, at };
        }
        Ok(Catchup { items, cursor })
    }
}
