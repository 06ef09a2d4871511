//! Visitors who leave: what the widget missed while its panel was closed
//! (read receipts), the operators' answers by email once the visitor has
//! gone, the visitor's emailed replies back into the conversation, and
//! transcripts on request.
//!
//! An operator message queues a `reply` email in its own transaction
//! (`feed::record`), for a visitor with an address that has not
//! unsubscribed. The mail worker sends it once the oldest unread message
//! has waited the delay and no widget stream of the conversation is open
//! ([`plan`] decides, at send time, on what the database says then).

pub mod compose;
pub mod inbound;
mod plan;
pub mod presence;
pub mod reply_text;
mod service;
pub mod tokens;

use std::time::Duration;

pub use plan::{plan, retry_at};
pub use service::{ContinuityService, InboundMail, InboundOutcome, MailSettings};

use crate::clock::Timestamp;
use crate::model::{ConversationDetails, ConversationId, Message, MessageId, SenderKind, Site, TenantId, Visitor};
use crate::verification::channels::Email;

/// How often an instance tells the database that the widget streams it
/// holds are still open.
pub const PRESENCE_REFRESH: Duration = Duration::from_secs(60);
/// How long after its last refresh a stream counts as open: two refreshes
/// may be missed (a busy database, an instance that died) before an email
/// goes to a visitor who may still be on the page.
pub const PRESENCE_WINDOW: Duration = Duration::from_secs(150);
/// After the last stream an instance holds ends: long enough for a page
/// that reloads to connect again.
pub const PRESENCE_GRACE: Duration = Duration::from_secs(5);
/// Where the unsubscribe links point, under the public address.
pub const UNSUBSCRIBE_PATH: &str = "/email/unsubscribe/";
/// A visitor may ask for a conversation's transcript once an hour.
pub const TRANSCRIPT_SPACING: Duration = Duration::from_secs(3600);
/// The unread answers one email carries at most; more go in the next.
pub const REPLY_LIMIT: u32 = 100;
/// The messages a transcript carries at most (the latest ones).
pub const TRANSCRIPT_LIMIT: u32 = 500;
/// Delays before the next attempt of an email the mail server did not
/// take; after the last, the email is given up (and logged).
pub const RETRY_SCHEDULE: [Duration; 7] = [
    Duration::from_secs(60),
    Duration::from_secs(5 * 60),
    Duration::from_secs(15 * 60),
    Duration::from_secs(3600),
    Duration::from_secs(3 * 3600),
    Duration::from_secs(6 * 3600),
    Duration::from_secs(12 * 3600),
];

/// What an email to a visitor is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MailKind {
    /// The operator messages the visitor has not read.
    Reply,
    /// The whole conversation, asked for by the visitor.
    Transcript,
}

impl MailKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reply => "reply",
            Self::Transcript => "transcript",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Reply, Self::Transcript].into_iter().find(|k| k.as_str() == s)
    }
}

/// Where a visitor's reading stands after a read marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VisitorRead {
    pub message_id: MessageId,
    /// Operator messages still unread by the visitor.
    pub unread_count: u64,
    /// The last operator message this marker read (its receipt, and those
    /// before it, were written now); none when it read nothing new.
    pub marked_through: Option<MessageId>,
}

/// An email the worker holds the lease of.
#[derive(Clone, Debug)]
pub struct ClaimedMail {
    pub id: i64,
    pub tenant: TenantId,
    pub conversation: ConversationId,
    pub kind: MailKind,
    pub attempts: u32,
    pub revision: i64,
    pub leased_until: Timestamp,
}

/// A conversation's email thread with its visitor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MailThread {
    /// `Message-ID` of its first email, without angle brackets.
    pub root_id: Option<String>,
    /// `Message-ID` of its latest email, sent or received.
    pub last_id: Option<String>,
    /// The last operator message an email carried (0 before any).
    pub emailed_through: i64,
    pub unsubscribed_at: Option<Timestamp>,
    pub transcript_at: Option<Timestamp>,
}

/// What the worker reads about a claimed email's conversation.
#[derive(Clone, Debug)]
pub struct MailContext {
    pub details: ConversationDetails,
    /// The conversation's site: the link back goes only to its domains.
    pub site: Site,
    pub thread: MailThread,
    /// Until when a widget stream of the conversation counts as open.
    pub open_until: Option<Timestamp>,
    /// A reply's: the operator messages the visitor has not read after
    /// `emailed_through`; a transcript's: what the visitor sees.
    pub messages: Vec<Message>,
}

/// What became of an email's turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MailStep {
    Send(Box<Email>, SentThread),
    /// Not yet: the messages are too new or the visitor is on the page.
    Later(Timestamp),
    /// Nothing to send (read meanwhile, no address, unsubscribed).
    Drop(&'static str),
}

/// What the thread records once the email has gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentThread {
    pub root_id: String,
    pub message_id: String,
    /// A reply's last message: the next reply starts after it.
    pub emailed_through: Option<MessageId>,
    /// A reply that carried [`REPLY_LIMIT`] answers: the rest are still
    /// to go, so the email stays queued.
    pub more: bool,
}

impl Visitor {
    /// Where the visitor's emails go: the address it gave (it accepted the
    /// privacy notice to open the conversation), else the one its
    /// verification proved.
    pub fn mail_address(&self) -> Option<String> {
        self.profile.email.clone().or_else(|| self.proven_email())
    }

    /// The address the visitor's verification proved (an email code or a
    /// magic link), else the one its site vouched for in a signed identity
    /// token, if any.
    pub fn proven_email(&self) -> Option<String> {
        self.proof().filter(|p| !p.method.uses_phone()).map(|p| p.target).or_else(|| self.site_email.clone())
    }
}

/// Whether `m` is a message whose reading the visitor's receipts track.
pub fn is_answer(m: &Message) -> bool {
    m.sender.kind == SenderKind::Operator && !m.internal
}
