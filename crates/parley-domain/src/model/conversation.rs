use super::{ConversationId, InstallationId, MessageId, OperatorId, SiteId, TenantId, Visitor, VisitorId};
use crate::clock::Timestamp;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConversationStatus {
    Unassigned,
    Assigned,
    Closed,
}

impl ConversationStatus {
    pub const ALL: [ConversationStatus; 3] = [ConversationStatus::Unassigned, ConversationStatus::Assigned, ConversationStatus::Closed];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unassigned => "unassigned",
            Self::Assigned => "assigned",
            Self::Closed => "closed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "unassigned" => Self::Unassigned,
            "assigned" => Self::Assigned,
            "closed" => Self::Closed,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug)]
pub struct Conversation {
    pub id: ConversationId,
    /// The visitor's capability to read this conversation.
    pub public_id: String,
    pub tenant_id: TenantId,
    pub site_id: SiteId,
    pub installation_id: InstallationId,
    pub visitor_id: VisitorId,
    pub status: ConversationStatus,
    pub subject: Option<String>,
    pub assignee_id: Option<OperatorId>,
    pub created_at: Timestamp,
    pub last_message_at: Timestamp,
    pub closed_at: Option<Timestamp>,
    pub verified_at: Option<Timestamp>,
}

#[derive(Clone, Debug)]
pub struct NewConversation {
    pub public_id: String,
    pub installation_id: InstallationId,
    pub visitor_id: VisitorId,
    pub subject: Option<String>,
    pub start_url: Option<String>,
    pub created_at: Timestamp,
}

/// Which conversations a list wants, by status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusFilter {
    All,
    Only(ConversationStatus),
    /// Unassigned or assigned.
    Open,
    /// Assigned to the operator who reads.
    Mine,
}

impl StatusFilter {
    /// Every filter's name, as requests give it.
    pub const NAMES: [&'static str; 5] = ["unassigned", "assigned", "closed", "open", "mine"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "open" => Some(Self::Open),
            "mine" => Some(Self::Mine),
            other => ConversationStatus::parse(other).map(Self::Only),
        }
    }
}

#[derive(Clone, Debug)]
pub struct SiteRef {
    pub id: SiteId,
    pub name: String,
}

#[derive(Clone, Debug)]
pub struct OperatorRef {
    pub id: OperatorId,
    pub name: String,
    pub email: String,
}

/// A conversation with what an operator's inbox shows next to it.
#[derive(Clone, Debug)]
pub struct ConversationDetails {
    pub conversation: Conversation,
    pub visitor: Visitor,
    pub site: SiteRef,
    pub assignee: Option<OperatorRef>,
    /// The visitor's messages after the reading operator's read marker
    /// (all of them before it reads any); 0 when a visitor reads.
    pub unread_count: u64,
    /// The start of the latest message the visitor and operators wrote
    /// (neither a note nor a system line), at most
    /// [`LAST_MESSAGE_CHARS`]: what a list shows of it.
    pub last_message: Option<String>,
    /// Since when the visitor has waited for an answer: the first of its
    /// messages after the last operator reply; none when answered.
    pub waiting_since: Option<Timestamp>,
}

/// How much of the latest message a conversation keeps for its lists:
/// more than any preview shows, so that a cut preview still ends in `…`.
pub const LAST_MESSAGE_CHARS: usize = 500;

impl ConversationDetails {
    /// The first line of the latest message, cut at `max` characters with
    /// `…`: a list's preview.
    pub fn preview(&self, max: usize) -> Option<String> {
        let line = self.last_message.as_deref()?.lines().map(str::trim).find(|l| !l.is_empty())?;
        let mut out: String = line.chars().take(max).collect();
        if line.chars().count() > max {
            out.push('…');
        }
        Some(out)
    }
}

/// Where an operator's reading of a conversation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadMarker {
    pub conversation_id: ConversationId,
    /// The last message read: it never moves backwards.
    pub message_id: MessageId,
    /// The visitor's messages after it.
    pub unread_count: u64,
}
