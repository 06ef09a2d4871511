//! Reading the feed for clients: where a client starts, whether the
//! cursor it brings back is still served, and the entries after it in the
//! client's own scope (an operator's sites, a visitor's conversation).

use std::sync::Arc;
use std::time::Duration;

use super::{Cursor, FeedItem, Hub, Position};
use crate::clock::{Clock, Timestamp};
use crate::error::DomainError;
use crate::model::{ConversationId, ConversationScope, Session, SiteScope, TenantId};
use crate::store::Database;

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

/// Where a returning client goes on from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    After(Position),
    /// The cursor is older than the retention or names no entry the feed
    /// holds: the client reloads what it shows and follows from a new one.
    Reset,
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
    fn tenant(&self) -> TenantId {
        match self {
            Reader::Operator(scope) => scope.tenant,
            Reader::Visitor(scope, _) => scope.tenant,
        }
    }
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
        let head = self.db.read(move |r| Ok(r.feed_head(tenant)?)).await?;
        Ok(head.map_or(Cursor::start(now), |(position, at)| Cursor { position, at }))
    }

    /// Whether `cursor` (as a client sent it back) is still served for
    /// `tenant`, and from where.
    pub async fn resume(&self, tenant: TenantId, cursor: &str) -> Result<Resume, DomainError> {
        let Ok(cursor) = cursor.parse::<Cursor>() else { return Ok(Resume::Reset) };
        self.resume_from(tenant, cursor).await
    }

    pub async fn resume_from(&self, tenant: TenantId, cursor: Cursor) -> Result<Resume, DomainError> {
        let now = self.clock.now();
        if cursor.at < now.minus(self.settings.retention) || cursor.at > now.plus(Duration::from_secs(300)) {
            return Ok(Resume::Reset);
        }
        if cursor.is_start() {
            return Ok(Resume::After(Position::START));
        }
        let position = cursor.position;
        let at = self.db.read(move |r| Ok(r.feed_entry_at(tenant, position)?)).await?;
        Ok(if at == Some(cursor.at) { Resume::After(position) } else { Resume::Reset })
    }

    /// The entries after `after` that `reader` sees, oldest first, at most
    /// [`PAGE`], and the cursor to read from next. When fewer than a page
    /// came, the cursor moves to the tenant's head as read before them:
    /// every entry up to it was readable, so those the reader does not
    /// see are not scanned again.
    pub async fn read(&self, reader: Reader, after: Cursor) -> Result<Catchup, DomainError> {
        let tenant = reader.tenant();
        let from = after.position;
        let (head, items) = self
            .db
            .read(move |r| {
                let head = r.feed_head(tenant)?;
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

    /// An operator's catch-up: the entries after `after`, waiting up to
    /// `wait` for one when there is none yet (long polling).
    pub async fn catch_up(&self, session: &Session, after: Option<Cursor>, wait: Duration) -> Result<Catchup, DomainError> {
        let tenant = session.tenant.id;
        let Some(after) = after else {
            return Ok(Catchup { items: Vec::new(), cursor: self.head(tenant).await? });
        };
        if self.resume_from(tenant, after).await? == Resume::Reset {
            return Err(DomainError::CursorExpired);
        }
        let reader = Reader::Operator(session.operator.scope().into());
        // Watching before the first read: an entry committed between the
        // read and the wait still wakes it.
        let mut watch = self.hub.tenant(tenant);
        let deadline = tokio::time::Instant::now() + wait;
        let mut after = after;
        loop {
            let page = self.read(reader, after).await?;
            if !page.items.is_empty() || tokio::time::Instant::now() >= deadline {
                return Ok(page);
            }
            after = page.cursor;
            if tokio::time::timeout_at(deadline, watch.changed()).await.is_err() {
                return self.read(reader, after).await;
            }
        }
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }
}
