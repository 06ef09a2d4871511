//! Erasing a conversation with every row that records it.
//!
//! Every table that names a conversation is listed here, in an order the
//! foreign keys accept; a test fills each of them and checks that an
//! erased conversation leaves no row in any table with a
//! `conversation_id` column, so a table added later and forgotten here
//! fails it.
//!
//! Feed entries are kept as tombstones rather than deleted: emptied of
//! their payload and of what names the conversation, they hold the feed's
//! positions, so a client whose cursor stood on one reads on instead of
//! being told to reload; the retention prunes them like any entry.

use parley_domain::Timestamp;
use parley_domain::model::*;
use parley_domain::store::StoreResult;
use parley_domain::store::ops::ErasureWrite;

use super::attachments::removal;
use super::{Tx, statements};

/// The rows of `table` that belong to the conversation: the same
/// condition for every table, so the list below reads as what it is.
fn rows_of(table: &str) -> String {
    format!("DELETE FROM {table} WHERE tenant_id = :tenant AND conversation_id = :conversation")
}

statements! {
    EXPIRED_CONVERSATIONS(cutoff: Timestamp, limit: u32) => |d| d.claim(
        "SELECT c.id AS id, c.tenant_id AS tenant_id FROM conversations c
         WHERE c.last_message_at < :cutoff ORDER BY c.last_message_at, c.id LIMIT :limit".into(),
        "c",
    ),
    QUEUE_CONVERSATION_FILES(tenant: TenantId, conversation: ConversationId, at: Timestamp, due: Timestamp) => |_|
        "INSERT INTO file_removals (tenant_id, storage_key, created_at, next_attempt_at)
         SELECT tenant_id, storage_key, :at, :due FROM attachments WHERE tenant_id = :tenant AND conversation_id = :conversation
         RETURNING id, storage_key, attempts".into(),
    ERASE_ATTACHMENTS(tenant: TenantId, conversation: ConversationId) => |_| rows_of("attachments"),
    /// Attempts go with their deliveries (ON DELETE CASCADE).
    ERASE_DELIVERIES(tenant: TenantId, conversation: ConversationId) => |_|
        "DELETE FROM webhook_deliveries WHERE tenant_id = :tenant
           AND event_id IN (SELECT id FROM events WHERE tenant_id = :tenant AND conversation_id = :conversation)".into(),
    /// Nothing of the conversation stays in a tombstone: no payload, no
    /// link to it or its messages, and no one reads or delivers it.
    ERASE_EVENTS(tenant: TenantId, conversation: ConversationId) => |_|
        "UPDATE events SET payload = '{}', conversation_id = NULL, message_id = NULL, widget = FALSE, webhook = FALSE
         WHERE tenant_id = :tenant AND conversation_id = :conversation".into(),
    ERASE_CHALLENGES(tenant: TenantId, conversation: ConversationId) => |_| rows_of("verification_challenges"),
    ERASE_READ_MARKERS(tenant: TenantId, conversation: ConversationId) => |_| rows_of("read_markers"),
    ERASE_PUSHES(tenant: TenantId, conversation: ConversationId) => |_| rows_of("push_outbox"),
    ERASE_PRESENCE(tenant: TenantId, conversation: ConversationId) => |_| rows_of("widget_presence"),
    ERASE_MAIL(tenant: TenantId, conversation: ConversationId) => |_| rows_of("visitor_mail"),
    ERASE_MAIL_THREAD(tenant: TenantId, conversation: ConversationId) => |_| rows_of("mail_threads"),
    ERASE_MESSAGES(tenant: TenantId, conversation: ConversationId) => |_| rows_of("messages"),
    ERASE_CONVERSATION(tenant: TenantId, conversation: ConversationId) => |_|
        "DELETE FROM conversations WHERE tenant_id = :tenant AND id = :conversation RETURNING visitor_id".into(),
    /// Locked before deciding whether the visitor goes, as a visitor's
    /// new conversation locks it (after the conversation, as here): one
    /// opened meanwhile is then seen, and the visitor kept.
    VISITOR_OF(tenant: TenantId, visitor: VisitorId) locked VISITOR_OF_LOCKED => |_|
        "SELECT v.id AS id FROM visitors v WHERE v.tenant_id = :tenant AND v.id = :visitor".into(),
    /// A visitor goes with their last conversation: what they told the
    /// site (name, email, attributes) is part of what is erased.
    ERASE_VISITOR(tenant: TenantId, visitor: VisitorId) => |_|
        "DELETE FROM visitors WHERE tenant_id = :tenant AND id = :visitor
           AND NOT EXISTS (SELECT 1 FROM conversations c WHERE c.tenant_id = :tenant AND c.visitor_id = :visitor)".into(),
}

impl ErasureWrite for Tx<'_> {
    fn expired_conversations(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<Vec<(TenantId, ConversationId)>> {
        self.all(EXPIRED_CONVERSATIONS { cutoff, limit }, |r| Ok((TenantId(r.i64("tenant_id")?), ConversationId(r.i64("id")?))))
    }

    fn erase_conversation(
        &mut self,
        tenant: TenantId,
        conversation: ConversationId,
        at: Timestamp,
        due: Timestamp,
    ) -> StoreResult<Vec<FileRemoval>> {
        let files = self.all(QUEUE_CONVERSATION_FILES { tenant, conversation, at, due }, removal)?;
        self.exec(ERASE_ATTACHMENTS { tenant, conversation })?;
        self.exec(ERASE_DELIVERIES { tenant, conversation })?;
        self.exec(ERASE_EVENTS { tenant, conversation })?;
        self.exec(ERASE_CHALLENGES { tenant, conversation })?;
        self.exec(ERASE_READ_MARKERS { tenant, conversation })?;
        self.exec(ERASE_PUSHES { tenant, conversation })?;
        self.exec(ERASE_PRESENCE { tenant, conversation })?;
        self.exec(ERASE_MAIL { tenant, conversation })?;
        self.exec(ERASE_MAIL_THREAD { tenant, conversation })?;
        self.exec(ERASE_MESSAGES { tenant, conversation })?;
        // Counts as a change of every conversation, here and on the other
        // instances: nothing left in the feed names this one.
        self.effects.conversations_erased = true;
        if let Some(visitor) = self.one(ERASE_CONVERSATION { tenant, conversation }, |r| r.i64("visitor_id"))? {
            let visitor = VisitorId(visitor);
            self.one(self.locking(VISITOR_OF { tenant, visitor }), |_| Ok(()))?;
            self.exec(ERASE_VISITOR { tenant, visitor })?;
        }
        Ok(files)
    }
}
