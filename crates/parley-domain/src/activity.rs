//! What a new message does to its conversation, whoever wrote it: it
//! records the activity and reopens a closed conversation.
//!
//! A reopened conversation goes back to its assignee only if that operator
//! can still answer it (active, and still able to see the site); otherwise
//! it reopens `unassigned`, back in the queue every operator watches,
//! instead of waiting for someone who will never reply.

use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::model::{Conversation, ConversationScope, ConversationStatus};
use crate::store::WriteTx;

/// Applies a new message's effect to `c` and saves it.
pub(crate) fn record_message(
    tx: &mut dyn WriteTx,
    scope: ConversationScope,
    c: &mut Conversation,
    now: Timestamp,
) -> Result<(), DomainError> {
    if c.status == ConversationStatus::Closed {
        let assignee_can_answer = match c.assignee_id {
            Some(id) => tx.operator(c.tenant_id, id)?.is_some_and(|op| op.active && op.can_see_site(c.site_id)),
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
    c.last_message_at = now;
    tx.update_conversation(scope, c)?;
    Ok(())
}
