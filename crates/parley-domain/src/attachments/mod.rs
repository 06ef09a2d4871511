//! Attachments: files visitors and operators upload into a conversation,
//! then name in a message.
//!
//! An upload is a row and an object in the file store. The row comes
//! first, so nothing can reach the store without a row the sweep finds;
//! the bytes are streamed to the store with the size limit counted as
//! they arrive; the type is then told from the content (`kinds`), a
//! picture is decoded within bounds for its size and thumbnail
//! (`images`), and the row is finished under the tenant's quota. A
//! message claims finished uploads of its sender's side in its own
//! conversation (`claim`); what no message claimed within a day goes.
//! Files are read back through signed, expiring links (`links`).

pub mod images;
pub mod kinds;
pub mod links;
pub mod names;
mod service;

pub use service::{AttachmentService, AttachmentSettings, Download, UploadTarget, removal_due};

use crate::error::DomainError;
use crate::model::{AttachmentRef, Conversation, MAX_ATTACHMENTS, Message, NewMessage, SenderKind};
use crate::store::WriteTx;

/// How long an upload may wait for a message to name it.
pub const UNNAMED_FOR: std::time::Duration = std::time::Duration::from_secs(86_400);

/// Uploads one side of a conversation may hold unsent: two messages'
/// worth. Unsent uploads count against the tenant's quota until they are
/// swept, so a visitor (whose token is public) must not pile them up.
pub const MAX_UNSENT: u64 = 2 * MAX_ATTACHMENTS as u64;

/// The uploads `new` names, checked and locked: each a finished upload
/// of the sender's side (visitor or operator) in `c`, named by no
/// message yet, none twice. Anything else refuses the whole message. (How
/// many a message may name is checked where its `Content` is made.)
pub(crate) fn claim(tx: &mut dyn WriteTx, c: &Conversation, new: &NewMessage) -> Result<Vec<crate::model::Attachment>, DomainError> {
    let ids = &new.attachment_ids;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    if new.sender.kind == SenderKind::System {
        return Err(DomainError::invalid("attachment_ids", "system lines carry no files"));
    }
    let mut claimed = Vec::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        if ids[..i].contains(id) {
            return Err(DomainError::invalid("attachment_ids", format!("names {id} twice")));
        }
        let found = tx.unnamed_attachment(c.tenant_id, c.id, new.sender.kind, id)?;
        claimed.push(found.ok_or_else(|| {
            DomainError::invalid("attachment_ids", format!("{id} is not an upload of yours in this conversation waiting to be sent"))
        })?);
    }
    Ok(claimed)
}

/// What the message says of the files it claimed.
pub(crate) fn described(claimed: &[crate::model::Attachment]) -> Vec<AttachmentRef> {
    claimed.iter().filter_map(crate::model::Attachment::describe).collect()
}

/// Makes the message the one that names what it claimed.
pub(crate) fn name(tx: &mut dyn WriteTx, claimed: &[crate::model::Attachment], m: &Message) -> Result<(), DomainError> {
    for a in claimed {
        tx.name_attachment(a.tenant_id, a.id, m.id)?;
    }
    Ok(())
}
