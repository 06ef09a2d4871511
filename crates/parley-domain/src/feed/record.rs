//! Appending to the feed from inside write units, so that a change and
//! the entries it causes commit together. Units add messages through
//! [`message`], never `insert_message` alone, so no message can be missed
//! by the streams.

use super::FeedEntry;
use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::events::{self, OutboxEvent};
use crate::model::{Conversation, ConversationScope, Message, NewMessage, SenderKind, Tenant, Visitor};
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
    let m = tx.insert_message(scope, new)?;
    appended_message(tx, tenant, c, &m)?;
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
    Ok(tx.append_event(tenant.id, &entry)?)
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
