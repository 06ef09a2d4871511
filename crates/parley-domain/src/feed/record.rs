//! Appending to the feed from inside write units, so that a change and
//! the entries it causes commit together. Units add messages through
//! [`message`], never `insert_message` alone, so no message can be missed
//! by the streams, and the operators' pushes are queued here with them.

use super::FeedEntry;
use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::events::{self, OutboxEvent};
use crate::model::{Conversation, ConversationScope, Message, NewMessage, Operator, SenderKind, Tenant, Visitor};
use crate::push::{PushReason, QueuedPush};
use crate::store::WriteTx;

/// Adds a message with its `message.created` entry. Partners get visitor
/// and operator messages as webhooks; notes and system lines stay in the
/// feed, and notes are for operators only.
pub(crate) fn message(
    tx: &mut dyn WriteTx,
    tenant: &Tenant,
    scope: ConversationScope,
    c: &Conversation,
    new: &NewMessage,
) -> Result<Message, DomainError> {
    let claimed = crate::attachments::claim(tx, c, new)?;
    let m = tx.insert_message(scope, new, &crate::attachments::described(&claimed))?;
    crate::attachments::name(tx, &claimed, &m)?;
    appended_message(tx, tenant, c, &m)?;
    if crate::continuity::is_answer(&m) {
        // An answer the visitor may miss: emailed after the delay unless
        // read (`continuity::plan` decides when it is due).
        tx.queue_reply_mail(tenant.id, c.id, m.created_at)?;
    }
    if m.sender.kind == SenderKind::Visitor && !m.internal {
        // The assignee alone once someone has it; everyone who can see
        // it while nobody has. (`CLAIMED_PUSHES` checks the same again
        // when the push is sent.)
        tx.queue_push(&QueuedPush {
            tenant: tenant.id,
            conversation: c.id,
            message: Some(m.id),
            reason: PushReason::Message,
            recipient: c.assignee_id,
            actor: None,
            at: m.created_at,
        })?;
    }
    Ok(m)
}

/// The `message.created` entry of a message the unit has just added
/// (when another entry must come between the two).
pub(crate) fn appended_message(tx: &mut dyn WriteTx, tenant: &Tenant, c: &Conversation, m: &Message) -> Result<(), DomainError> {
    let entry = FeedEntry {
        event: events::message_created(tenant, c, m),
        conversation: Some((c.id, c.site_id)),
        message: Some(m.id),
        widget: !m.internal,
        webhook: !m.internal && m.sender.kind != SenderKind::System,
    };
    Ok(tx.append_event(tenant.id, &entry)?)
}

/// The visitor's widget showed the messages up to `through`: operators
/// see the receipts (`conversation.updated` with that message).
pub(crate) fn visitor_read(
    tx: &mut dyn WriteTx,
    tenant: &Tenant,
    c: &Conversation,
    through: crate::model::MessageId,
    now: Timestamp,
) -> Result<(), DomainError> {
    let entry = FeedEntry {
        event: events::visitor_read(tenant, c, through, now),
        conversation: Some((c.id, c.site_id)),
        message: Some(through),
        widget: false,
        webhook: false,
    };
    Ok(tx.append_event(tenant.id, &entry)?)
}

/// A new conversation, for operators and partners (its visitor opened it).
pub(crate) fn conversation_created(
    tx: &mut dyn WriteTx,
    tenant: &Tenant,
    c: &Conversation,
    visitor: &Visitor,
    first: &Message,
) -> Result<(), DomainError> {
    let entry = FeedEntry {
        event: events::conversation_created(tenant, c, visitor, first),
        conversation: Some((c.id, c.site_id)),
        message: Some(first.id),
        widget: false,
        webhook: true,
    };
    tx.append_event(tenant.id, &entry)?;
    tx.queue_push(&QueuedPush {
        tenant: tenant.id,
        conversation: c.id,
        message: Some(first.id),
        reason: PushReason::Conversation,
        recipient: c.assignee_id,
        actor: None,
        at: first.created_at,
    })?;
    Ok(())
}

/// The conversation was handed to its assignee by `actor` (assigned or
/// transferred): the assignee is pushed, unless it took it itself.
pub(crate) fn handed_over(
    tx: &mut dyn WriteTx,
    tenant: &Tenant,
    c: &Conversation,
    actor: &Operator,
    now: Timestamp,
) -> Result<(), DomainError> {
    let Some(assignee) = c.assignee_id else { return Ok(()) };
    if assignee == actor.id {
        return Ok(());
    }
    let push = QueuedPush {
        tenant: tenant.id,
        conversation: c.id,
        message: None,
        reason: PushReason::Assigned,
        recipient: Some(assignee),
        actor: Some(actor.id),
        at: now,
    };
    Ok(tx.queue_push(&push)?)
}

/// A change of the conversation's status, assignee or verification:
/// `event` when partners get it as a webhook (closed, verified), else a
/// `conversation.updated` of the feed alone. `widget`: its visitor sees
/// the change (an operator handing it to another changes nothing the
/// visitor is shown, and its stream and cursor must not move for it).
pub(crate) fn conversation_changed(
    tx: &mut dyn WriteTx,
    tenant: &Tenant,
    c: &Conversation,
    event: Option<OutboxEvent>,
    widget: bool,
    now: Timestamp,
) -> Result<(), DomainError> {
    let webhook = event.is_some();
    let event = event.unwrap_or_else(|| events::conversation_updated(tenant, c, now));
    let entry = FeedEntry { event, conversation: Some((c.id, c.site_id)), message: None, widget, webhook };
    Ok(tx.append_event(tenant.id, &entry)?)
}
