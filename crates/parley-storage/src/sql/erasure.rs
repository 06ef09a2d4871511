//! Erasing a conversation with every row that records it, and the queue
//! of file objects whose rows are gone.
//!
//! Every table that names a conversation is listed here, in an order the
//! foreign keys accept; a test checks that an erased conversation leaves
//! no row in any table with a `conversation_id` column, so a table added
//! later and forgotten here fails it.

use parley_domain::Timestamp;
use parley_domain::model::*;
use parley_domain::store::StoreResult;
use parley_domain::store::ops::ErasureWrite;

use super::{Row, Tx, statements};

/// The rows of `table` that belong to the conversation.
fn rows_of(table: &str) -> String {
    format!("DELETE FROM {table} WHERE tenant_id = :tenant AND conversation_id = :conversation")
}

statements! {
    EXPIRED_CONVERSATIONS(cutoff: Timestamp, limit: u32) => |d| d.claim(
        "SELECT c.id AS id, c.tenant_id AS tenant_id FROM conversations c
         WHERE c.last_message_at < :cutoff ORDER BY c.last_message_at, c.id LIMIT :limit".into(),
        "c",
    ),
    QUEUE_CONVERSATION_FILES(tenant: TenantId, conversation: ConversationId, at: Timestamp) => |_|
        "INSERT INTO file_removals (tenant_id, storage_key, created_at)
         SELECT tenant_id, storage_key, :at FROM attachments WHERE tenant_id = :tenant AND conversation_id = :conversation
         RETURNING id, storage_key".into(),
    ERASE_ATTACHMENTS(tenant: TenantId, conversation: ConversationId) => |_| rows_of("attachments"),
    /// Attempts go with their deliveries (ON DELETE CASCADE).
    ERASE_DELIVERIES(tenant: TenantId, conversation: ConversationId) => |_|
        "DELETE FROM webhook_deliveries WHERE tenant_id = :tenant
           AND event_id IN (SELECT id FROM events WHERE tenant_id = :tenant AND conversation_id = :conversation)".into(),
    ERASE_EVENTS(tenant: TenantId, conversation: ConversationId) => |_| rows_of("events"),
    ERASE_CHALLENGES(tenant: TenantId, conversation: ConversationId) => |_| rows_of("verification_challenges"),
    ERASE_READ_MARKERS(tenant: TenantId, conversation: ConversationId) => |_| rows_of("read_markers"),
    ERASE_PUSHES(tenant: TenantId, conversation: ConversationId) => |_| rows_of("push_outbox"),
    ERASE_PRESENCE(tenant: TenantId, conversation: ConversationId) => |_| rows_of("widget_presence"),
    ERASE_MAIL(tenant: TenantId, conversation: ConversationId) => |_| rows_of("visitor_mail"),
    ERASE_MAIL_THREAD(tenant: TenantId, conversation: ConversationId) => |_| rows_of("mail_threads"),
    ERASE_MESSAGES(tenant: TenantId, conversation: ConversationId) => |_| rows_of("messages"),
    ERASE_CONVERSATION(tenant: TenantId, conversation: ConversationId) => |_|
        "DELETE FROM conversations WHERE tenant_id = :tenant AND id = :conversation RETURNING visitor_id".into(),
    /// A visitor goes with their last conversation: what they told the
    /// site (name, email, attributes) is part of what is erased.
    ERASE_VISITOR(tenant: TenantId, visitor: VisitorId) => |_|
        "DELETE FROM visitors WHERE tenant_id = :tenant AND id = :visitor
           AND NOT EXISTS (SELECT 1 FROM conversations WHERE visitor_id = :visitor)".into(),
    REMOVE_UPLOAD(tenant: TenantId, id: AttachmentId) => |_|
        "DELETE FROM attachments WHERE tenant_id = :tenant AND id = :id AND message_id IS NULL RETURNING storage_key".into(),
    QUEUE_FILE<'a>(tenant: TenantId, storage_key: &'a str, at: Timestamp) => |_|
        "INSERT INTO file_removals (tenant_id, storage_key, created_at) VALUES (:tenant, :storage_key, :at) RETURNING id".into(),
    FILE_REMOVALS(limit: u32) => |_| "SELECT id, storage_key FROM file_removals ORDER BY created_at, id LIMIT :limit".into(),
    FILE_REMOVED(id: i64) => |_| "DELETE FROM file_removals WHERE id = :id".into(),
}

fn removal(r: &dyn Row) -> StoreResult<FileRemoval> {
    Ok(FileRemoval { id: r.i64("id")?, storage_key: r.string("storage_key")? })
}

impl ErasureWrite for Tx<'_> {
    fn expired_conversations(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<Vec<(TenantId, ConversationId)>> {
        self.all(EXPIRED_CONVERSATIONS { cutoff, limit }, |r| Ok((TenantId(r.i64("tenant_id")?), ConversationId(r.i64("id")?))))
    }

    fn erase_conversation(&mut self, tenant: TenantId, conversation: ConversationId, at: Timestamp) -> StoreResult<Vec<FileRemoval>> {
        let files = self.all(QUEUE_CONVERSATION_FILES { tenant, conversation, at }, removal)?;
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
        if let Some(visitor) = self.one(ERASE_CONVERSATION { tenant, conversation }, |r| r.i64("visitor_id"))? {
            self.exec(ERASE_VISITOR { tenant, visitor: VisitorId(visitor) })?;
        }
        Ok(files)
    }

    fn remove_upload(&mut self, tenant: TenantId, id: AttachmentId, at: Timestamp) -> StoreResult<Option<FileRemoval>> {
        let Some(storage_key) = self.one(REMOVE_UPLOAD { tenant, id }, |r| r.string("storage_key"))? else { return Ok(None) };
        let id = self.one(QUEUE_FILE { tenant, storage_key: &storage_key, at }, |r| r.i64("id"))?;
        Ok(id.map(|id| FileRemoval { id, storage_key }))
    }

    fn file_removals(&mut self, limit: u32) -> StoreResult<Vec<FileRemoval>> {
        self.all(FILE_REMOVALS { limit }, removal)
    }

    fn file_removed(&mut self, id: i64) -> StoreResult<()> {
        self.exec(FILE_REMOVED { id })?;
        Ok(())
    }
}
