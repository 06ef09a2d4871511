//! What a new message does to its conversation, whoever wrote it: it
//! records the activity and reopens a closed conversation.
//!
//! A reopened conversation goes back to its assignee only if that operator
//! can still answer it (active, and still able to see the site); otherwise
//! it reopens `unassigned`, back in the queue every operator watches,
//! instead of waiting for someone who will never reply.

use crate::error::DomainError;
use crate::feed::record;
use crate::model::{Conversation, ConversationScope, ConversationStatus, Message, NewMessage, Tenant};
use crate::store::WriteTx;

/// The message a repeat of `new` stands for: the one its sender sent
/// earlier in the conversation under the same client id. The caller has
/// locked the conversation, so a repeat racing the first waits for it
/// and finds it.
pub(crate) fn earlier_send(tx: &mut dyn WriteTx, scope: ConversationScope, new: &NewMessage) -> Result<Option<Message>, DomainError> {
    match &new.client_message_id {
        Some(id) => Ok(tx.client_message(scope, new.conversation_id, &new.sender, id)?),
        None => Ok(None),
    }
}

/// Adds a message that counts as activity (a visitor's, an operator's, or
/// the announcement of an explicit reopen) to `c`, with its effect on the
/// conversation saved first; a reopening is a change everyone following
/// the conversation sees, and comes before the message in the feed.
pub(crate) fn add_message(
    tx: &mut dyn WriteTx,
    tenant: &Tenant,
    scope: ConversationScope,
    c: &mut Conversation,
    new: &NewMessage,
) -> Result<Message, DomainError> {
    let now = new.created_at;
    let reopened = c.status == ConversationStatus::Closed;
    if reopened {
        let assignee_can_answer = match c.assignee_id {
            Some(id) => tx.operator(c.tenant_id, id)?.is_some_and(|op| op.can_answer(c)),
            None => false,
        };
        if assignee_can_answer {
            c.status = ConversationStatus::Assigned;
        } else {
            c.status = ConversationStatus::Unassigned;
            c.assignee_id = None;
        }
        c.closed_at = None;
    }
    // A message both sides see makes its time the conversation's last
    // activity as it is added (`insert_message`); the row is written here
    // only when reopening changes more than that, which keeps a post to
    // one update of the conversation. Every message added here is one
    // both sides see, but a reopen's announcement, which always reopens.
    c.last_message_at = now;
    if reopened {
        tx.update_conversation(scope, c)?;
        record::conversation_changed(tx, tenant, c, None, true, now)?;
    }
    record::message(tx, tenant, scope, c, new)
}
