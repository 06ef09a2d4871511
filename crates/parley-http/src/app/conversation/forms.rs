//! The conversation page's forms, read as the API's bodies are (one
//! derived type each, the same field types and rules), with two fields a
//! browser fills in by itself read leniently: a bad one counts as none.

use parley_domain::model::OperatorId;
use parley_domain::validate;

use crate::extract::{Field, Fields, FromFields, Invalid, Schema, Shape};
use crate::requests::schema::{self, MessageBody, Note};

/// A reply to the visitor: text, files the page's script uploaded, or both.
#[derive(FromFields)]
pub struct ReplyForm {
    pub body: Option<MessageBody>,
    pub client_message_id: Option<QuietClientId>,
    /// The uploads, comma-separated (one hidden field the script fills).
    pub attachment_ids: Option<AttachmentIdList>,
}

/// Attachment ids, comma-separated.
pub struct AttachmentIdList(pub Vec<String>);

impl Field for AttachmentIdList {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        schema::rule(&validate::ATTACHMENT_ID, false).into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        f.optional(name, |s| {
            let ids: Vec<String> = s.split(',').map(str::trim).filter(|id| !id.is_empty()).map(str::to_owned).collect();
            for id in &ids {
                validate::ATTACHMENT_ID.check(id)?;
            }
            Ok(AttachmentIdList(ids))
        })
    }
}

/// A note for operators: unlike a transfer's, it must have text.
#[derive(FromFields)]
pub struct NoteForm {
    pub body: Note,
    pub client_message_id: Option<QuietClientId>,
}

/// An assignment, or a transfer with its note.
#[derive(FromFields)]
pub struct HandOverForm {
    /// None when not chosen (or not an operator id): the page asks.
    pub operator_id: Option<QuietOperatorId>,
    pub note: Option<Note>,
}

/// A take, as the page showed the conversation (`seen`: its assignee
/// then, empty for none).
#[derive(FromFields)]
pub struct TakeForm {
    pub seen: Option<QuietOperatorId>,
}

/// The page's own id for a message it sends; a browser never sends a bad
/// one, and without one a repeat is simply a second message.
pub struct QuietClientId(pub String);

impl Field for QuietClientId {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        schema::rule(&validate::CLIENT_MESSAGE_ID, false).into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        Ok(f.optional(name, |s| Ok(validate::client_message_id(s).ok().map(QuietClientId)))?.flatten())
    }
}

/// An operator chosen in a list (text, so that anything else reads as
/// none rather than as an error of the form).
pub struct QuietOperatorId(pub OperatorId);

impl Field for QuietOperatorId {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        schema::id(false).into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        let id = |s: &str| s.parse::<i64>().ok().filter(|v| *v > 0).map(|v| QuietOperatorId(OperatorId(v)));
        Ok(f.optional(name, |s| Ok(id(s)))?.flatten())
    }
}
