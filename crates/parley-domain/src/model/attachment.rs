use serde::{Deserialize, Serialize};

use super::{AttachmentId, ConversationId, MessageId, OperatorId, SenderKind, SiteId, TenantId};
use crate::clock::Timestamp;

/// An uploaded file, as its row keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attachment {
    pub id: AttachmentId,
    /// What clients name it by (`att_…`, random).
    pub public_id: String,
    pub tenant_id: TenantId,
    pub site_id: SiteId,
    pub conversation_id: ConversationId,
    /// The message that names it; `None` while it is an upload waiting.
    pub message_id: Option<MessageId>,
    /// `Visitor` or `Operator`: only its own side may name it.
    pub uploader: SenderKind,
    pub uploader_id: Option<OperatorId>,
    /// Where the file store keeps its bytes (random; the thumbnail's is
    /// derived from it).
    pub storage_key: String,
    pub name: String,
    /// What its content is, once all of it is in and checked; `None`
    /// while it is being received (or was never finished).
    pub facts: Option<AttachmentFacts>,
    pub created_at: Timestamp,
}

/// What was learnt of a file once it was in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachmentFacts {
    pub content_type: String,
    pub size: u64,
    /// The name as kept: the client's, cleaned, with an extension that
    /// fits the content (see `kinds::Sniffed::fitting_name`).
    pub name: String,
    /// A picture decoded within bounds: its size and the thumbnail's.
    pub picture: Option<PictureFacts>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PictureFacts {
    pub width: u32,
    pub height: u32,
    pub thumbnail_size: u64,
}

impl Attachment {
    /// Where its thumbnail is kept.
    pub fn thumbnail_key(&self) -> String {
        thumbnail_key(&self.storage_key)
    }

    /// How a message describes it, once it is complete.
    pub fn describe(&self) -> Option<AttachmentRef> {
        let facts = self.facts.as_ref()?;
        Some(AttachmentRef {
            id: self.public_id.clone(),
            name: facts.name.clone(),
            content_type: facts.content_type.clone(),
            size: facts.size,
            width: facts.picture.map(|p| p.width),
            height: facts.picture.map(|p| p.height),
        })
    }
}

/// Where the thumbnail of the file under `key` is kept.
fn thumbnail_key(key: &str) -> String {
    format!("{key}_thumbnail")
}

/// A file whose row is gone, its objects still to be removed from the
/// store.
#[derive(Clone, Debug)]
pub struct FileRemoval {
    pub id: i64,
    pub storage_key: String,
    /// How many times the store has refused it.
    pub attempts: u32,
}

/// What finishing an upload's row came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finished {
    Done,
    /// The tenant's files would take more than its quota.
    OverQuota,
    /// The row is gone: its conversation was erased meanwhile.
    Gone,
}

impl FileRemoval {
    /// The objects to remove: the file and its thumbnail, if it had one.
    pub fn keys(&self) -> [String; 2] {
        [self.storage_key.clone(), thumbnail_key(&self.storage_key)]
    }
}

/// An upload about to be received.
#[derive(Clone, Debug)]
pub struct NewAttachment {
    pub public_id: String,
    pub conversation_id: ConversationId,
    pub uploader: SenderKind,
    pub uploader_id: Option<OperatorId>,
    pub storage_key: String,
    pub name: String,
    pub created_at: Timestamp,
}

/// What a message says of one of its attachments, fixed when it is sent
/// (kept with the message, see the `messages.attachments` column). A
/// picture shown inline has `width` and `height`, and a thumbnail.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentRef {
    pub id: String,
    pub name: String,
    pub content_type: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
}

impl AttachmentRef {
    /// Shown inline (and with a thumbnail): a picture decoded within bounds.
    pub fn inline(&self) -> bool {
        self.width.is_some()
    }
}
