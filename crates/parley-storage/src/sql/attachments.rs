//! Uploaded files: their rows. The bytes are in the file store, under the
//! row's random key.

use parley_domain::Timestamp;
use parley_domain::model::*;
use parley_domain::store::ops::{AttachmentsRead, AttachmentsWrite};
use parley_domain::store::{StoreError, StoreResult};

use super::conversations::SCOPE;
use super::{Row, Tx, statements};

const COLS: &str = "f.id AS f_id, f.public_id AS f_public_id, f.tenant_id AS f_tenant_id, f.site_id AS f_site_id, \
     f.conversation_id AS f_conversation_id, f.message_id AS f_message_id, f.uploader_type AS f_uploader_type, \
     f.uploader_id AS f_uploader_id, f.storage_key AS f_storage_key, f.name AS f_name, f.content_type AS f_content_type, \
     f.size AS f_size, f.width AS f_width, f.height AS f_height, f.thumbnail_size AS f_thumbnail_size, f.created_at AS f_created_at";

fn attachment(r: &dyn Row) -> StoreResult<Attachment> {
    let picture = match (r.int("f_width")?, r.int("f_height")?) {
        (Some(width), Some(height)) => Some(PictureFacts {
            width: u32::try_from(width).map_err(|_| StoreError::Internal("f_width out of range".into()))?,
            height: u32::try_from(height).map_err(|_| StoreError::Internal("f_height out of range".into()))?,
            thumbnail_size: r.int("f_thumbnail_size")?.and_then(|n| u64::try_from(n).ok()).unwrap_or(0),
        }),
        _ => None,
    };
    let facts = match r.text("f_content_type")? {
        Some(content_type) => Some(AttachmentFacts { content_type, size: r.u64("f_size")?, picture, name: r.string("f_name")? }),
        None => None,
    };
    Ok(Attachment {
        id: AttachmentId(r.i64("f_id")?),
        public_id: r.string("f_public_id")?,
        tenant_id: TenantId(r.i64("f_tenant_id")?),
        site_id: SiteId(r.i64("f_site_id")?),
        conversation_id: ConversationId(r.i64("f_conversation_id")?),
        message_id: r.int("f_message_id")?.map(MessageId),
        uploader: r.parsed("f_uploader_type", SenderKind::parse)?,
        uploader_id: r.int("f_uploader_id")?.map(OperatorId),
        storage_key: r.string("f_storage_key")?,
        name: r.string("f_name")?,
        facts,
        created_at: r.ts("f_created_at")?,
    })
}

statements! {
    ATTACHMENT_BY_PUBLIC_ID<'a>(public_id: &'a str) => |_|
        format!("SELECT {COLS} FROM attachments f WHERE f.public_id = :public_id"),
    /// An upload still being received counts as `:pending` bytes: its
    /// size is not known yet, and it must not slip under the quota.
    FILES_USAGE(tenant: TenantId, pending: u64) => |_|
        "SELECT CAST(COALESCE(SUM(CASE WHEN content_type IS NULL THEN :pending ELSE size + COALESCE(thumbnail_size, 0) END), 0) AS BIGINT) AS n
         FROM attachments WHERE tenant_id = :tenant".into(),
    UNSENT_UPLOADS<'a>(tenant: TenantId, conversation: ConversationId, uploader_type: &'a str) => |_|
        "SELECT COUNT(*) AS n FROM attachments
         WHERE tenant_id = :tenant AND conversation_id = :conversation AND uploader_type = :uploader_type AND message_id IS NULL".into(),
    /// Into a conversation of the scope only.
    INSERT_ATTACHMENT<'a>(
        scope: ConversationScope, public_id: &'a str, conversation: ConversationId, uploader_type: &'a str,
        uploader_id: Option<OperatorId>, storage_key: &'a str, name: &'a str, created_at: Timestamp,
    ) => |_| format!(
        "INSERT INTO attachments (public_id, tenant_id, site_id, conversation_id, uploader_type, uploader_id, storage_key, name, created_at)
         SELECT :public_id, c.tenant_id, c.site_id, c.id, :uploader_type, :uploader_id, :storage_key, :name, :created_at
         FROM conversations c WHERE {SCOPE} AND c.id = :conversation
         RETURNING id, site_id"
    ),
    FINISH_ATTACHMENT<'a>(
        tenant: TenantId, id: AttachmentId, content_type: &'a str, size: u64, width: Option<u32>, height: Option<u32>,
        thumbnail_size: Option<u64>, name: &'a str,
    ) => |_| "UPDATE attachments SET content_type = :content_type, size = :size, width = :width, height = :height,
             thumbnail_size = :thumbnail_size, name = :name
         WHERE tenant_id = :tenant AND id = :id AND content_type IS NULL".into(),
    UNNAMED_ATTACHMENT<'a>(tenant: TenantId, conversation: ConversationId, uploader_type: &'a str, public_id: &'a str)
        locked UNNAMED_ATTACHMENT_LOCKED => |_| format!(
        "SELECT {COLS} FROM attachments f
         WHERE f.tenant_id = :tenant AND f.conversation_id = :conversation AND f.uploader_type = :uploader_type
           AND f.public_id = :public_id AND f.message_id IS NULL AND f.content_type IS NOT NULL"
    ),
    NAME_ATTACHMENT(tenant: TenantId, id: AttachmentId, message: MessageId) => |_|
        "UPDATE attachments SET message_id = :message WHERE tenant_id = :tenant AND id = :id AND message_id IS NULL".into(),
    REMOVE_UPLOAD(tenant: TenantId, id: AttachmentId) => |_|
        "DELETE FROM attachments WHERE tenant_id = :tenant AND id = :id AND message_id IS NULL RETURNING storage_key".into(),
    QUEUE_FILE<'a>(tenant: TenantId, storage_key: &'a str, at: Timestamp, due: Timestamp) => |_|
        "INSERT INTO file_removals (tenant_id, storage_key, created_at, next_attempt_at) VALUES (:tenant, :storage_key, :at, :due)
         RETURNING id, storage_key, attempts".into(),
    FILE_REMOVALS_DUE(now: Timestamp, limit: u32) => |_|
        "SELECT id, storage_key, attempts FROM file_removals WHERE next_attempt_at <= :now ORDER BY next_attempt_at, id LIMIT :limit".into(),
    FILE_REMOVED(id: i64) => |_| "DELETE FROM file_removals WHERE id = :id".into(),
    FILE_REMOVAL_FAILED(id: i64, next_attempt_at: Timestamp) => |_|
        "UPDATE file_removals SET attempts = attempts + 1, next_attempt_at = :next_attempt_at WHERE id = :id".into(),
    STALE_UPLOADS(cutoff: Timestamp, limit: u32) => |d| d.claim(format!(
        "SELECT {COLS} FROM attachments f WHERE f.message_id IS NULL AND f.created_at < :cutoff ORDER BY f.created_at LIMIT :limit"
    ), "f"),
}

pub(super) fn removal(r: &dyn Row) -> StoreResult<FileRemoval> {
    Ok(FileRemoval {
        id: r.i64("id")?,
        storage_key: r.string("storage_key")?,
        attempts: u32::try_from(r.i64("attempts")?).unwrap_or(u32::MAX),
    })
}

impl AttachmentsRead for Tx<'_> {
    fn attachment_by_public_id(&mut self, public_id: &str) -> StoreResult<Option<Attachment>> {
        self.one(ATTACHMENT_BY_PUBLIC_ID { public_id }, attachment)
    }

    fn files_usage(&mut self, tenant: TenantId, pending: u64) -> StoreResult<u64> {
        self.count(FILES_USAGE { tenant, pending })
    }

    fn unsent_uploads(&mut self, tenant: TenantId, conversation: ConversationId, uploader: SenderKind) -> StoreResult<u64> {
        self.count(UNSENT_UPLOADS { tenant, conversation, uploader_type: uploader.as_str() })
    }

    fn file_removals_due(&mut self, now: Timestamp, limit: u32) -> StoreResult<Vec<FileRemoval>> {
        self.all(FILE_REMOVALS_DUE { now, limit }, removal)
    }
}

impl AttachmentsWrite for Tx<'_> {
    fn insert_attachment(&mut self, scope: ConversationScope, new: &NewAttachment) -> StoreResult<Option<Attachment>> {
        let params = INSERT_ATTACHMENT {
            scope,
            public_id: &new.public_id,
            conversation: new.conversation_id,
            uploader_type: new.uploader.as_str(),
            uploader_id: new.uploader_id,
            storage_key: &new.storage_key,
            name: &new.name,
            created_at: new.created_at,
        };
        let inserted = self.one(params, |r| Ok((r.i64("id")?, r.i64("site_id")?)))?;
        Ok(inserted.map(|(id, site)| Attachment {
            id: AttachmentId(id),
            public_id: new.public_id.clone(),
            tenant_id: scope.tenant,
            site_id: SiteId(site),
            conversation_id: new.conversation_id,
            message_id: None,
            uploader: new.uploader,
            uploader_id: new.uploader_id,
            storage_key: new.storage_key.clone(),
            name: new.name.clone(),
            facts: None,
            created_at: new.created_at,
        }))
    }

    fn finish_attachment(
        &mut self,
        tenant: TenantId,
        id: AttachmentId,
        facts: &AttachmentFacts,
        quota: u64,
        pending: u64,
    ) -> StoreResult<Finished> {
        self.transaction_lock(crate::locks::named(&format!("files of {}", tenant.0)))?;
        // The sum counts this upload as pending too: it is what it adds now.
        let usage = self.count(FILES_USAGE { tenant, pending })?.saturating_sub(pending);
        let adds = facts.size + facts.picture.map_or(0, |p| p.thumbnail_size);
        if usage.saturating_add(adds) > quota {
            return Ok(Finished::OverQuota);
        }
        let params = FINISH_ATTACHMENT {
            tenant,
            id,
            content_type: &facts.content_type,
            size: facts.size,
            width: facts.picture.map(|p| p.width),
            height: facts.picture.map(|p| p.height),
            thumbnail_size: facts.picture.map(|p| p.thumbnail_size),
            name: &facts.name,
        };
        // An upload is finished once, by the task that received it: a row
        // not there to finish went with its erased conversation.
        Ok(if self.exec(params)? == 1 { Finished::Done } else { Finished::Gone })
    }

    fn remove_upload(&mut self, tenant: TenantId, id: AttachmentId, at: Timestamp, due: Timestamp) -> StoreResult<Option<FileRemoval>> {
        let Some(storage_key) = self.one(REMOVE_UPLOAD { tenant, id }, |r| r.string("storage_key"))? else { return Ok(None) };
        self.queue_file_removal(tenant, &storage_key, at, due).map(Some)
    }

    fn queue_file_removal(&mut self, tenant: TenantId, storage_key: &str, at: Timestamp, due: Timestamp) -> StoreResult<FileRemoval> {
        self.one(QUEUE_FILE { tenant, storage_key, at, due }, removal)?
            .ok_or_else(|| StoreError::Internal("QUEUE_FILE returned nothing".into()))
    }

    fn file_removed(&mut self, id: i64) -> StoreResult<()> {
        self.exec(FILE_REMOVED { id })?;
        Ok(())
    }

    fn file_removal_failed(&mut self, id: i64, next_attempt_at: Timestamp) -> StoreResult<()> {
        self.exec(FILE_REMOVAL_FAILED { id, next_attempt_at })?;
        Ok(())
    }

    fn unnamed_attachment(
        &mut self,
        tenant: TenantId,
        conversation: ConversationId,
        uploader: SenderKind,
        public_id: &str,
    ) -> StoreResult<Option<Attachment>> {
        let params = UNNAMED_ATTACHMENT { tenant, conversation, uploader_type: uploader.as_str(), public_id };
        self.one(self.locking(params), attachment)
    }

    fn name_attachment(&mut self, tenant: TenantId, id: AttachmentId, message: MessageId) -> StoreResult<()> {
        if self.exec(NAME_ATTACHMENT { tenant, id, message })? != 1 {
            return Err(StoreError::Internal("the attachment to name is gone or named".into()));
        }
        Ok(())
    }

    fn stale_uploads(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<Vec<Attachment>> {
        self.all(STALE_UPLOADS { cutoff, limit }, attachment)
    }
}
