use super::{AttachmentRef, ConversationId, MessageId, OperatorId, TenantId};
use crate::clock::Timestamp;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SenderKind {
    Visitor,
    Operator,
    System,
}

impl SenderKind {
    pub const ALL: [SenderKind; 3] = [SenderKind::Visitor, SenderKind::Operator, SenderKind::System];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Visitor => "visitor",
            Self::Operator => "operator",
            Self::System => "system",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "visitor" => Self::Visitor,
            "operator" => Self::Operator,
            "system" => Self::System,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sender {
    pub kind: SenderKind,
    /// Display name at the time of sending, so renaming an operator does not
    /// rewrite history.
    pub name: Option<String>,
    pub operator_id: Option<OperatorId>,
}

#[derive(Clone, Debug)]
pub struct Message {
    /// Increases in commit order within a conversation, so `after_id`
    /// polling never skips or repeats a message.
    pub id: MessageId,
    pub tenant_id: TenantId,
    pub conversation_id: ConversationId,
    pub sender: Sender,
    pub body: String,
    /// Operator-only note (a transfer note): never shown to the visitor.
    pub internal: bool,
    pub created_at: Timestamp,
    /// The sender's own id for it, when its client gave one.
    pub client_message_id: Option<String>,
    /// When the visitor's widget first showed it (operator messages only):
    /// the read receipt operators see.
    pub read_by_visitor_at: Option<Timestamp>,
    /// The files it carries, as they were when it was sent.
    pub attachments: Vec<AttachmentRef>,
}

impl Message {
    /// The text with a line naming each file: what shows of a message
    /// where its files cannot (an email, a push), so a message of files
    /// alone is never blank there.
    pub fn text_and_files(&self) -> String {
        let files = self.attachments.iter().map(|a| format!("\u{1f4ce} {}", a.name));
        std::iter::once(self.body.clone()).filter(|b| !b.is_empty()).chain(files).collect::<Vec<_>>().join("\n")
    }
}

#[derive(Clone, Debug)]
pub struct NewMessage {
    pub conversation_id: ConversationId,
    pub sender: Sender,
    pub body: String,
    pub internal: bool,
    pub created_at: Timestamp,
    pub client_message_id: Option<String>,
    /// Uploads of the sender's side in this conversation that the message
    /// names (at most [`MAX_ATTACHMENTS`]); they are claimed as it is added.
    pub attachment_ids: Vec<String>,
}

/// The most attachments one message may name.
pub const MAX_ATTACHMENTS: usize = 10;

/// What a sender writes: text, files, or both.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Content {
    /// Checked text; empty only when files are named.
    pub body: String,
    pub attachment_ids: Vec<String>,
}

impl Content {
    /// Text alone.
    pub fn text(body: String) -> Self {
        Self { body, attachment_ids: Vec::new() }
    }

    /// A message needs text or at least one file, and names at most
    /// [`MAX_ATTACHMENTS`]. `body` was checked on its own already.
    pub fn new(body: Option<String>, attachment_ids: Vec<String>) -> Result<Self, crate::error::DomainError> {
        if attachment_ids.len() > MAX_ATTACHMENTS {
            return Err(crate::error::DomainError::invalid("attachment_ids", format!("names at most {MAX_ATTACHMENTS} attachments")));
        }
        match body {
            // A JSON body says so with its other fields' problems (the
            // request reader checks it too); a form reaches it here.
            None if attachment_ids.is_empty() => Err(crate::error::DomainError::invalid("body", "is required")),
            body => Ok(Self { body: body.unwrap_or_default(), attachment_ids }),
        }
    }
}
