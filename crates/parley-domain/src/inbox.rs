//! The operator side of conversations: the inbox, replies, and the state
//! machine of assign, transfer and close.
//!
//! Every query runs in the operator's own scope (an admin sees the tenant's
//! conversations, an agent those of its sites), so a conversation out of
//! sight is simply not found.
//!
//! States: `unassigned` -> `assigned` (assign or transfer) -> `closed`
//! (close); a visitor or operator message reopens a closed conversation
//! (see [`crate::activity`]). Assign and
//! transfer on a closed conversation are conflicts; closing a closed one
//! changes nothing.

use std::sync::Arc;

use crate::clock::{Clock, Timestamp};
use crate::error::DomainError;
use crate::events::{self, ClosedBy};
use crate::feed::{Cursor, Reader, record};
use crate::model::*;
use crate::search::{SearchPage, SearchQuery};
use crate::store::{Database, MessagePage, WriteTx};
use crate::widget::MESSAGE_PAGE_LIMIT;

/// A page of a list, both numbers already checked (page from 1, per_page
/// 1 to 100).
#[derive(Clone, Copy, Debug)]
pub struct PageRequest {
    pub page: u32,
    pub per_page: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageMeta {
    pub current_page: u32,
    pub per_page: u32,
    pub total: u64,
    pub last_page: u64,
}

impl PageMeta {
    pub fn new(page: PageRequest, total: u64) -> Self {
        let last_page = total.div_ceil(u64::from(page.per_page)).max(1);
        Self { current_page: page.page, per_page: page.per_page, total, last_page }
    }
}

/// A conversation as its page shows it (see `InboxService::transcript`).
#[derive(Clone, Debug)]
pub struct Transcript {
    pub details: ConversationDetails,
    pub messages: Vec<Message>,
    pub earlier_left_out: bool,
    /// Who the conversation can be handed to: active, able to see its
    /// site and not its assignee, by name.
    pub assignees: Vec<OperatorRef>,
    /// The feed's position as of the read.
    pub cursor: Cursor,
}

#[derive(Clone)]
pub struct InboxService {
    db: Database,
    clock: Arc<dyn Clock>,
}

impl InboxService {
    pub fn new(db: Database, clock: Arc<dyn Clock>) -> Self {
        Self { db, clock }
    }

    /// Runs `f` in one write unit as the session's operator, with its
    /// tenant and the time of the request.
    async fn as_operator<T, F>(&self, session: &Session, f: F) -> Result<T, DomainError>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn WriteTx, &Operator, &Tenant, Timestamp) -> Result<T, DomainError> + Send + 'static,
    {
        let (actor, tenant, now) = (session.operator.clone(), session.tenant.clone(), self.clock.now());
        self.db.write(move |tx| f(tx, &actor, &tenant, now)).await
    }

    /// `as_operator` on the conversation `id`, open: a closed one is
    /// refused with a conflict before `f` runs.
    async fn on_open<F>(&self, session: &Session, id: ConversationId, f: F) -> Result<ConversationDetails, DomainError>
    where
        F: FnOnce(&mut dyn WriteTx, &Operator, &Tenant, Conversation, Timestamp) -> Result<ConversationDetails, DomainError>
            + Send
            + 'static,
    {
        self.as_operator(session, move |tx, actor, tenant, now| {
            let c = open_conversation(tx, actor.scope().into(), id)?;
            f(tx, actor, tenant, c, now)
        })
        .await
    }

    /// A page of the inbox, with the feed's position as of the read: taken
    /// first, so whatever changes after the list is after the cursor.
    pub async fn list(
        &self,
        session: &Session,
        filter: StatusFilter,
        page: PageRequest,
    ) -> Result<(Vec<ConversationDetails>, PageMeta, Cursor), DomainError> {
        let scope: ConversationScope = session.operator.scope().into();
        let now = self.clock.now();
        self.db
            .read(move |r| {
                let cursor = crate::feed::head_cursor(r, Reader::Operator(scope), now)?;
                let total = r.count_conversations(scope, filter)?;
                let offset = u64::from(page.page - 1) * u64::from(page.per_page);
                let list = r.conversations(scope, filter, offset, page.per_page)?;
                Ok((list, PageMeta::new(page, total), cursor))
            })
            .await
    }

    /// A page of the conversations the operator sees that match `query`
    /// (see `crate::search`), the latest match first.
    pub async fn search(&self, session: &Session, query: SearchQuery, page: PageRequest) -> Result<SearchPage, DomainError> {
        let scope: ConversationScope = session.operator.scope().into();
        let offset = u64::from(page.page - 1) * u64::from(page.per_page);
        let mut hits = self.db.read(move |r| Ok(r.search(scope, &query, page.per_page + 1, offset)?)).await?;
        // One more than the page was asked for: whether another follows.
        let more = hits.len() > page.per_page as usize;
        hits.truncate(page.per_page as usize);
        Ok(SearchPage { hits, more })
    }

    /// Whether the operator of `scope` sees conversation `id` (for what
    /// a stream shows without reading the feed: typing indicators).
    pub async fn sees(&self, scope: OperatorScope, id: ConversationId) -> Result<bool, DomainError> {
        self.db.read(move |r| Ok(r.conversation(scope.into(), id)?.is_some())).await
    }

    pub async fn get(&self, session: &Session, id: ConversationId) -> Result<ConversationDetails, DomainError> {
        let scope: ConversationScope = session.operator.scope().into();
        self.db.read(move |r| r.conversation_details(scope, id)?.ok_or(DomainError::NotFound)).await
    }

    /// Moves the caller's read marker in a conversation it sees to
    /// `message` (never backwards): 404 for a conversation it does not
    /// see, 422 for a message of another conversation.
    pub async fn mark_read(&self, session: &Session, id: ConversationId, message: MessageId) -> Result<ReadMarker, DomainError> {
        let scope: ConversationScope = session.operator.scope().into();
        let now = self.clock.now();
        self.db
            .write(move |tx| {
                tx.conversation(scope, id)?.ok_or(DomainError::NotFound)?;
                tx.mark_read(scope, id, message, now)?
                    .ok_or_else(|| DomainError::invalid("message_id", "must be a message of this conversation"))
            })
            .await
    }

    /// How many open conversations the caller sees have messages from
    /// their visitor it has not read: the badge of its devices.
    pub async fn unread_conversations(&self, session: &Session) -> Result<u64, DomainError> {
        let scope: ConversationScope = session.operator.scope().into();
        self.db.read(move |r| Ok(r.unread_conversations(scope)?)).await
    }

    /// What a page of the conversation shows: its details, its last
    /// `keep` messages (notes included, oldest first) and whether earlier
    /// ones were left out, and the operators it can be handed to (none
    /// once closed), read in one snapshot, with the feed's position taken
    /// first so that a live page following from it misses nothing.
    pub async fn transcript(&self, session: &Session, id: ConversationId, keep: u32) -> Result<Transcript, DomainError> {
        let scope: ConversationScope = session.operator.scope().into();
        let reader = session.operator.id;
        let now = self.clock.now();
        self.db
            .read(move |r| {
                let cursor = crate::feed::head_cursor(r, Reader::Operator(scope), now)?;
                let details = r.conversation_details(scope, id)?.ok_or(DomainError::NotFound)?;
                // One more than shown tells whether there are earlier ones.
                let page = MessagePage { after_id: None, limit: keep.saturating_add(1), include_internal: true };
                let mut messages = r.messages(scope, id, page)?;
                let earlier_left_out = messages.len() > keep as usize;
                if earlier_left_out {
                    messages.remove(0);
                }
                let c = &details.conversation;
                let assignees = if c.status == ConversationStatus::Closed {
                    Vec::new()
                } else {
                    let mut list: Vec<OperatorRef> = r
                        .operators(scope.tenant)?
                        .into_iter()
                        // Not the assignee, nor the reader: taking it is
                        // its own action, not a hand-over to oneself.
                        .filter(|o| o.can_answer(c) && c.assignee_id != Some(o.id) && o.id != reader)
                        .map(|o| OperatorRef { id: o.id, name: o.name, email: o.email })
                        .collect();
                    list.sort_by(|a, b| a.name.to_lowercase().cmp(&b.name.to_lowercase()).then(a.id.0.cmp(&b.id.0)));
                    list
                };
                Ok(Transcript { details, messages, earlier_left_out, assignees, cursor })
            })
            .await
    }

    /// Messages for the operator, operator-only notes included.
    pub async fn messages(&self, session: &Session, id: ConversationId, after_id: Option<MessageId>) -> Result<Vec<Message>, DomainError> {
        let scope: ConversationScope = session.operator.scope().into();
        self.db
            .read(move |r| {
                let conversation = r.conversation(scope, id)?.ok_or(DomainError::NotFound)?;
                let page = MessagePage { after_id, limit: MESSAGE_PAGE_LIMIT, include_internal: true };
                Ok(r.messages(scope, conversation.id, page)?)
            })
            .await
    }

    /// An operator reply. A closed conversation reopens, as for a visitor.
    /// A repeat of an earlier one (the same
    /// `client_message_id` from the same operator) adds nothing and
    /// answers that one.
    pub async fn reply(
        &self,
        session: &Session,
        id: ConversationId,
        content: Content,
        client_message_id: Option<String>,
    ) -> Result<(Message, ConversationDetails), DomainError> {
        self.as_operator(session, move |tx, actor, tenant, now| {
            let scope: ConversationScope = actor.scope().into();
            let mut c = tx.conversation(scope, id)?.ok_or(DomainError::NotFound)?;
            let new = NewMessage {
                client_message_id,
                attachment_ids: content.attachment_ids,
                ..operator_message(&c, actor, content.body, false, now)
            };
            if let Some(earlier) = crate::activity::earlier_send(tx, scope, &new)? {
                return Ok((earlier, details(tx, scope, id)?));
            }
            let message = crate::activity::add_message(tx, tenant, scope, &mut c, &new)?;
            Ok((message, details(tx, scope, id)?))
        })
        .await
    }

    /// Assigns to `target`, or to the caller when `target` is `None`.
    /// Assigning to the current assignee changes nothing and answers the
    /// conversation as it is, so a client may safely retry a take.
    pub async fn assign(
        &self,
        session: &Session,
        id: ConversationId,
        target: Option<OperatorId>,
    ) -> Result<ConversationDetails, DomainError> {
        self.on_open(session, id, move |tx, actor, tenant, c, now| assign_in(tx, actor, tenant, c, target, now)).await
    }

    /// Takes the conversation for the operator, as the page showed it:
    /// `seen` is the assignee the operator saw. When another operator
    /// took it meanwhile, two would answer the visitor without knowing of
    /// each other, so that is refused; taking over from the one who was
    /// shown is what the operator asked for.
    pub async fn take(&self, session: &Session, id: ConversationId, seen: Option<OperatorId>) -> Result<ConversationDetails, DomainError> {
        self.on_open(session, id, move |tx, actor, tenant, c, now| {
            if c.assignee_id != seen && c.assignee_id != Some(actor.id) {
                return Err(DomainError::Conflict("another operator took the conversation a moment ago"));
            }
            assign_in(tx, actor, tenant, c, None, now)
        })
        .await
    }

    /// Hands the conversation to `target`, with an optional note that only
    /// operators see.
    pub async fn transfer(
        &self,
        session: &Session,
        id: ConversationId,
        target: OperatorId,
        note: Option<String>,
    ) -> Result<ConversationDetails, DomainError> {
        self.on_open(session, id, move |tx, actor, tenant, c, now| transfer_in(tx, actor, tenant, c, target, note, now)).await
    }

    /// The web app's *hand over*: an assignment when the conversation is
    /// unassigned and there is no note, else a transfer (only a transfer
    /// carries a note), chosen in the unit that makes the change.
    pub async fn hand_over(
        &self,
        session: &Session,
        id: ConversationId,
        target: OperatorId,
        note: Option<String>,
    ) -> Result<ConversationDetails, DomainError> {
        self.on_open(session, id, move |tx, actor, tenant, c, now| {
            if note.is_none() && c.status == ConversationStatus::Unassigned {
                assign_in(tx, actor, tenant, c, Some(target), now)
            } else {
                transfer_in(tx, actor, tenant, c, target, note, now)
            }
        })
        .await
    }

    /// Closes the conversation; closing a closed one changes nothing and
    /// emits nothing.
    pub async fn close(&self, session: &Session, id: ConversationId) -> Result<ConversationDetails, DomainError> {
        self.as_operator(session, move |tx, actor, tenant, now| {
            let scope: ConversationScope = actor.scope().into();
            let mut c = tx.conversation(scope, id)?.ok_or(DomainError::NotFound)?;
            if c.status != ConversationStatus::Closed {
                c.status = ConversationStatus::Closed;
                c.closed_at = Some(now);
                tx.update_conversation(scope, &c)?;
                record::message(tx, tenant, scope, &c, &system_message(&c, "Conversation closed".into(), Some(actor), false, now))?;
                let closed = events::conversation_closed(tenant, &c, ClosedBy::Operator(actor), now);
                record::conversation_changed(tx, tenant, &c, Some(closed), true, now)?;
            }
            details(tx, scope, id)
        })
        .await
    }

    /// An internal note: a message only operators see. It neither
    /// reopens a closed conversation nor counts as activity the visitor
    /// waits on. A repeat (the same `client_message_id` from the same
    /// operator) adds nothing, as for a reply.
    pub async fn note(
        &self,
        session: &Session,
        id: ConversationId,
        content: Content,
        client_message_id: Option<String>,
    ) -> Result<Message, DomainError> {
        self.as_operator(session, move |tx, actor, tenant, now| {
            let scope: ConversationScope = actor.scope().into();
            let c = tx.conversation(scope, id)?.ok_or(DomainError::NotFound)?;
            let new = NewMessage {
                client_message_id,
                attachment_ids: content.attachment_ids,
                ..operator_message(&c, actor, content.body, true, now)
            };
            if let Some(earlier) = crate::activity::earlier_send(tx, scope, &new)? {
                return Ok(earlier);
            }
            record::message(tx, tenant, scope, &c, &new)
        })
        .await
    }

    /// Where an operator's upload into conversation `id` goes: one the
    /// operator can see, open or closed (a reply reopens it).
    pub async fn upload_target(&self, session: &Session, id: ConversationId) -> Result<crate::attachments::UploadTarget, DomainError> {
        let operator = &session.operator;
        let scope: ConversationScope = operator.scope().into();
        let uploader_id = Some(operator.id);
        self.db
            .read(move |r| {
                let c = r.conversation(scope, id)?.ok_or(DomainError::NotFound)?;
                let site = r.site(c.tenant_id, c.site_id)?.ok_or(DomainError::NotFound)?;
                Ok(crate::attachments::UploadTarget {
                    scope,
                    conversation: c.id,
                    uploader: SenderKind::Operator,
                    uploader_id,
                    site: site.settings,
                })
            })
            .await
    }

    /// Opens a closed conversation again without a message: back to its
    /// assignee if that operator can still answer, else unassigned.
    /// Reopening an open conversation changes nothing.
    pub async fn reopen(&self, session: &Session, id: ConversationId) -> Result<ConversationDetails, DomainError> {
        self.as_operator(session, move |tx, actor, tenant, now| {
            let scope: ConversationScope = actor.scope().into();
            let mut c = tx.conversation(scope, id)?.ok_or(DomainError::NotFound)?;
            if c.status == ConversationStatus::Closed {
                // As a message would: its announcement is the latest
                // message, so the idle sweeper leaves it open.
                let announcement = system_message(&c, "Conversation reopened".into(), Some(actor), false, now);
                crate::activity::add_message(tx, tenant, scope, &mut c, &announcement)?;
            }
            details(tx, scope, id)
        })
        .await
    }
}

/// `assign` within its unit, on the open conversation `c`.
fn assign_in(
    tx: &mut dyn WriteTx,
    actor: &Operator,
    tenant: &Tenant,
    mut c: Conversation,
    target: Option<OperatorId>,
    now: Timestamp,
) -> Result<ConversationDetails, DomainError> {
    let scope: ConversationScope = actor.scope().into();
    let target_id = target.unwrap_or(actor.id);
    if c.assignee_id == Some(target_id) {
        return details(tx, scope, c.id);
    }
    let target = assignable(tx, actor, &c, target_id)?;
    let text = if target.id == actor.id {
        format!("{} joined the conversation", actor.name)
    } else {
        format!("{} assigned the conversation to {}", actor.name, target.name)
    };
    hand_to(tx, tenant, &mut c, actor, &target, text, now)?;
    details(tx, scope, c.id)
}

/// `transfer` within its unit, on the open conversation `c`.
fn transfer_in(
    tx: &mut dyn WriteTx,
    actor: &Operator,
    tenant: &Tenant,
    mut c: Conversation,
    target: OperatorId,
    note: Option<String>,
    now: Timestamp,
) -> Result<ConversationDetails, DomainError> {
    let scope: ConversationScope = actor.scope().into();
    let target = assignable(tx, actor, &c, target)?;
    let text = format!("{} transferred the conversation to {}", actor.name, target.name);
    hand_to(tx, tenant, &mut c, actor, &target, text, now)?;
    if let Some(note) = note {
        record::message(tx, tenant, scope, &c, &operator_message(&c, actor, note, true, now))?;
    }
    details(tx, scope, c.id)
}

/// The conversation, refusing a closed one with a conflict.
fn open_conversation(tx: &mut dyn WriteTx, scope: ConversationScope, id: ConversationId) -> Result<Conversation, DomainError> {
    let c = tx.conversation(scope, id)?.ok_or(DomainError::NotFound)?;
    if c.status == ConversationStatus::Closed {
        return Err(DomainError::Conflict("the conversation is closed"));
    }
    Ok(c)
}

/// Checks that `target` can take the conversation: of the same tenant,
/// active, able to see its site, and not already its assignee.
fn assignable(tx: &mut dyn WriteTx, actor: &Operator, c: &Conversation, target: OperatorId) -> Result<Operator, DomainError> {
    let problem = |m: &str| DomainError::invalid("operator_id", m);
    let operator = tx.operator(actor.tenant_id, target)?.ok_or_else(|| problem("no such operator"))?;
    if !operator.active {
        return Err(problem("this operator is disabled"));
    }
    if !operator.can_see_site(c.site_id) {
        return Err(problem("this operator cannot see the conversation's site"));
    }
    if c.assignee_id == Some(operator.id) {
        return Err(problem("the conversation is already assigned to this operator"));
    }
    Ok(operator)
}

/// Assigns the conversation to `target` and tells the operators why.
/// The visitor sees only that someone has it (the status), never who
/// routed it to whom: the line is for operators, and a hand-over between
/// operators changes nothing the visitor sees.
/// `actor` hands it over, in its own scope.
fn hand_to(
    tx: &mut dyn WriteTx,
    tenant: &Tenant,
    c: &mut Conversation,
    actor: &Operator,
    target: &Operator,
    announcement: String,
    now: Timestamp,
) -> Result<(), DomainError> {
    let scope: ConversationScope = actor.scope().into();
    let visible = c.status != ConversationStatus::Assigned;
    c.status = ConversationStatus::Assigned;
    c.assignee_id = Some(target.id);
    tx.update_conversation(scope, c)?;
    record::conversation_changed(tx, tenant, c, None, visible, now)?;
    record::message(tx, tenant, scope, c, &system_message(c, announcement, None, true, now))?;
    record::handed_over(tx, tenant, c, actor, now)
}

fn details(tx: &mut dyn WriteTx, scope: ConversationScope, id: ConversationId) -> Result<ConversationDetails, DomainError> {
    tx.conversation_details(scope, id)?.ok_or(DomainError::NotFound)
}

fn operator_message(c: &Conversation, actor: &Operator, body: String, internal: bool, now: Timestamp) -> NewMessage {
    NewMessage {
        conversation_id: c.id,
        sender: Sender { kind: SenderKind::Operator, name: Some(actor.name.clone()), operator_id: Some(actor.id) },
        body,
        internal,
        created_at: now,
        client_message_id: None,
        attachment_ids: Vec::new(),
    }
}

/// A line of the conversation's own; `internal` keeps it among operators.
/// `actor`, the operator whose action it tells, is for operators only:
/// what a visitor is shown of a system line names nobody.
pub(crate) fn system_message(c: &Conversation, body: String, actor: Option<&Operator>, internal: bool, now: Timestamp) -> NewMessage {
    NewMessage {
        conversation_id: c.id,
        sender: Sender { kind: SenderKind::System, name: actor.map(|a| a.name.clone()), operator_id: actor.map(|a| a.id) },
        body,
        internal,
        created_at: now,
        client_message_id: None,
        attachment_ids: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_meta() {
        let m = PageMeta::new(PageRequest { page: 2, per_page: 20 }, 41);
        assert_eq!((m.current_page, m.per_page, m.total, m.last_page), (2, 20, 41, 3));
        assert_eq!(PageMeta::new(PageRequest { page: 1, per_page: 20 }, 0).last_page, 1);
    }
}
