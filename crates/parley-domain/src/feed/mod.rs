//! The feed: every change a client can see, recorded in the transaction
//! of the change, in one ordered log per tenant. Webhook deliveries are
//! fanned out from it, the live streams and the operators' catch-up read
//! it, so a client that resumes from a cursor gets exactly what it has
//! not seen, whichever instance it reaches.
//!
//! `record` appends entries from inside write units; `cursor` is the
//! position a client holds; `service` reads the feed for clients;
//! `follow` reads it live for a stream; `hub` tells an instance's streams
//! when to read again; `slots` bounds the streams of one address;
//! `changes` counts which conversations changed, so that `polls` can
//! answer a visitor's poll that is up to date without a read.

mod changes;
mod cursor;
mod follow;
pub mod hub;
pub mod polls;
pub(crate) mod record;
mod seal;
mod service;
mod slots;

pub use changes::Changes;
pub use cursor::Cursor;
pub use follow::{Follower, Step};
pub use hub::Hub;
pub use seal::CursorSeal;
pub(crate) use service::head as head_cursor;
pub use service::{Catchup, FeedService, FeedSettings, PAGE, Reader};
pub use slots::{Slot, StreamSlots};

use crate::clock::Timestamp;
use crate::events::{EventKind, OutboxEvent};
use crate::model::{ConversationDetails, ConversationId, Message, MessageId, SiteId, TenantId};

/// Where an entry sits in the feed: entries are ordered by `tx`, then
/// `id`. `tx` is the writing transaction on PostgreSQL and 0 on SQLite
/// (see the storage dialect's `visible_tx`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub tx: i64,
    pub id: i64,
}

impl Position {
    /// Before every entry.
    pub const START: Position = Position { tx: 0, id: 0 };
}

/// What a write unit appends.
#[derive(Clone, Debug)]
pub struct FeedEntry {
    pub event: OutboxEvent,
    /// The conversation (and its site) the entry is about, if any: the
    /// streams carry only such entries.
    pub conversation: Option<(ConversationId, SiteId)>,
    pub message: Option<MessageId>,
    /// The conversation's visitor sees it.
    pub widget: bool,
    /// Delivered to the tenant's webhook endpoints.
    pub webhook: bool,
}

impl FeedEntry {
    pub fn webhook_only(event: OutboxEvent) -> Self {
        Self { event, conversation: None, message: None, widget: false, webhook: true }
    }
}

/// An entry as a client reads it: the conversation as it is now, and the
/// message the entry is about.
#[derive(Clone, Debug)]
pub struct FeedItem {
    pub position: Position,
    pub kind: EventKind,
    pub occurred_at: Timestamp,
    pub conversation: ConversationDetails,
    pub message: Option<Message>,
}

impl FeedItem {
    pub fn cursor(&self) -> Cursor {
        Cursor { position: self.position, at: self.occurred_at }
    }
}

/// The database session whose unfinished transaction holds committed
/// entries back: what whoever runs the database needs to find and end it.
/// What the database does not tell is `None`.
#[derive(Clone, Debug)]
pub struct FeedBlocker {
    /// The session's process id on the database server.
    pub pid: i64,
    pub database: Option<String>,
    pub application: Option<String>,
    /// Such as `active` or `idle in transaction`.
    pub state: Option<String>,
    /// Since its transaction began.
    pub running: Option<std::time::Duration>,
}

/// An entry as an instance's follower reads it: enough to know whose
/// streams to wake.
#[derive(Clone, Copy, Debug)]
pub struct FeedMark {
    pub position: Position,
    pub tenant: TenantId,
    pub conversation: Option<ConversationId>,
}
