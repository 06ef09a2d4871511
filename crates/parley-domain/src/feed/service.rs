//! Reading the feed for clients: where a client starts, whether the
//! cursor it brings back is still served, and the entries after it in the
//! client's own scope (an operator's sites, a visitor's conversation).

use std::sync::Arc;
use std::time::Duration;

use super::{Cursor, FeedItem, Hub};
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
}

/// The tenant's position as of this read, inside any unit that reads what
/// a client then shows (see [`FeedService::head`]).
pub(crate) fn head(r: &mut dyn ReadTx, tenant: TenantId, now: Timestamp) -> StoreResult<Cursor> {
    Ok(r.feed_head(tenant)?.map_or(Cursor::start(now), |(position, at)| Cursor { position, at }))
}

impl FeedService {
    pub fn new(db: Database, clock: Arc<dyn Clock>, hub: Arc<Hub>, settings: FeedSettings) -> Self {
        Self { db, clock, hub, settings }
    }

    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// The tenant's position as of now: a client that has just read what
    /// it shows follows from here and misses nothing committed after.
    pub async fn head(&self, tenant: TenantId) -> Result<Cursor, DomainError> {
        let now = self.clock.now();
        self.db.read(move |r| Ok(head(r, tenant, now)?)).await
    }

    /// Whether a cursor of this age may still be served: younger than
    /// the retention, and not from the future (a forged or skewed one).
    fn in_retention(&self, cursor: Cursor) -> bool {
        let now = self.clock.now();
        cursor.at >= now.minus(self.settings.retention) && cursor.at <= now.plus(Duration::from_secs(300))
    }

    /// The entries after `after` that `reader` sees, oldest first, at most
    /// [`PAGE`], and the cursor to read from next. When fewer than a page
    /// came, the cursor moves to the tenant's head as read before them:
    /// every entry up to it was readable, so those the reader does not
    /// see are not scanned again. With `check`, a cursor the feed no
    /// longer holds (or never held for this tenant) is `CursorExpired`,
    /// found in the same unit as the entries.
    ///
    /// A cursor at the tenant's head is served whatever its age: a quiet
    /// tenant's newest entry may be older than the retention, and a
    /// client that has just been given that cursor has missed nothing.
    pub async fn read(&self, reader: Reader, after: Cursor, check: bool) -> Result<Catchup, DomainError> {
        let fresh = self.in_retention(after);
        let tenant = reader.tenant();
        let from = after.position;
        let (head, items) = self
            .db
            .read(move |r| {
                let head = r.feed_head(tenant)?;
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
        if items.len() < PAGE as usize
            && let Some((position, at)) = head
            && position > cursor.position
        {
            cursor = Cursor { position, at };
        }
        Ok(Catchup { items, cursor })
    }
}
