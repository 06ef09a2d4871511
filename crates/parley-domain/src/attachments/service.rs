//! Receiving uploads, serving files through signed links, and removing
//! the uploads no message named.

use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::Semaphore;

use super::images;
use super::kinds::{self, FileKind};
use super::links::{LinkError, Links, Variant};
use super::names;
use crate::clock::{Clock, Timestamp};
use crate::error::DomainError;
use crate::files::{ByteStream, FileError, FileStore};
use crate::model::{
    Attachment, AttachmentFacts, ConversationId, ConversationScope, FileRemoval, Finished, NewAttachment, OperatorId, PictureFacts,
    SenderKind, SiteSettings,
};
use crate::store::Database;

/// How long a caller waits for the store to remove files before leaving
/// the rest to the sweep.
const REMOVE_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);
/// How long after a refusal a removal is tried again, doubling with
/// each refusal up to [`REMOVAL_RETRY_AT_MOST`]: a file the store keeps
/// refusing costs a try a day, and never holds up the others.
const REMOVAL_RETRY: std::time::Duration = std::time::Duration::from_secs(60);
const REMOVAL_RETRY_AT_MOST: std::time::Duration = std::time::Duration::from_secs(86_400);

/// When the sweep may take a removal queued at `now`: the unit that
/// queued it removes the objects itself right after its commit, and the
/// sweep steps in only if that did not finish (a crash, a slow store).
/// Were it due at once, the two would race, and a refused object would
/// count two refusals for one.
pub fn removal_due(now: Timestamp) -> Timestamp {
    now.plus(REMOVAL_RETRY)
}

/// How long an upload waits for the picture decoder before its picture is
/// kept as a plain download.
const DECODER_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// `PARLEY_ATTACHMENT_MAX` and `PARLEY_FILES_QUOTA_PER_TENANT`.
#[derive(Clone, Copy, Debug)]
pub struct AttachmentSettings {
    /// The largest file, in bytes.
    pub max_size: u64,
    /// What one tenant's files may take together, in bytes.
    pub quota: u64,
}

impl Default for AttachmentSettings {
    fn default() -> Self {
        Self { max_size: 10 * 1024 * 1024, quota: 5 * 1024 * 1024 * 1024 }
    }
}

/// Where an upload goes and whose it is, as the widget or the inbox
/// resolved it for the caller.
#[derive(Clone, Debug)]
pub struct UploadTarget {
    pub scope: ConversationScope,
    pub conversation: ConversationId,
    pub uploader: SenderKind,
    pub uploader_id: Option<OperatorId>,
    /// The site's settings: which kinds of file it takes.
    pub site: SiteSettings,
}

/// A file on its way to a client.
pub struct Download {
    pub size: u64,
    pub body: ByteStream,
    /// The type to send: the picture's own for pictures shown inline,
    /// `application/octet-stream` for everything else.
    pub content_type: &'static str,
    /// `Content-Disposition`: `inline` for pictures, `attachment` for the
    /// rest, with the cleaned name.
    pub disposition: String,
    /// When the link expires (seconds since the epoch): how long a cache
    /// may keep the answer.
    pub expires: i64,
}

pub struct AttachmentService {
    db: Database,
    files: Arc<dyn FileStore>,
    links: Links,
    settings: AttachmentSettings,
    clock: Arc<dyn Clock>,
    /// One picture decoded at a time per instance: a decoded picture may
    /// take up to `images::MAX_ALLOC`, and twenty at once must not add up.
    decoding: Arc<Semaphore>,
}

impl AttachmentService {
    pub fn new(db: Database, files: Arc<dyn FileStore>, links: Links, settings: AttachmentSettings, clock: Arc<dyn Clock>) -> Self {
        Self { db, files, links, settings, clock, decoding: Arc::new(Semaphore::new(1)) }
    }

    pub fn links(&self) -> &Links {
        &self.links
    }

    pub fn settings(&self) -> AttachmentSettings {
        self.settings
    }

    /// Receives a file. `name` is the client's (cleaned, kept only to be
    /// shown); the type comes from the content. Past the size limit, on a
    /// body cut short, a type the site does not take or the quota, nothing
    /// stays.
    ///
    /// Once its row is made, the upload runs to its end in a task of its
    /// own: a client that hangs up stops the body, and the task still
    /// removes what was kept (or finishes the row), so nothing is left
    /// half-made and the decoder's turn is held until decoding ends.
    pub async fn upload(self: &Arc<Self>, target: UploadTarget, name: &str, body: ByteStream) -> Result<Attachment, DomainError> {
        let tenant = target.scope.tenant;
        let (quota, pending) = (self.settings.quota, self.settings.max_size);
        if self.db.read(move |r| Ok(r.files_usage(tenant, pending)?)).await? >= quota {
            return Err(DomainError::QuotaExceeded);
        }
        let new = NewAttachment {
            public_id: crate::ids::prefixed::<18>("att_")?,
            conversation_id: target.conversation,
            uploader: target.uploader,
            uploader_id: target.uploader_id,
            storage_key: crate::ids::hex(&crate::ids::random_bytes::<16>()?),
            name: names::clean(name),
            created_at: self.clock.now(),
        };
        let scope = target.scope;
        let row = self
            .db
            .write(move |tx| {
                // Locked first, as every change of a conversation does: an
                // erasure under way finishes before, and the upload then
                // finds nothing.
                tx.conversation(scope, new.conversation_id)?.ok_or(DomainError::NotFound)?;
                if tx.unsent_uploads(scope.tenant, new.conversation_id, new.uploader)? >= super::MAX_UNSENT {
                    let why = format!("cannot be added: {} files already wait to be sent in this conversation", super::MAX_UNSENT);
                    return Err(DomainError::invalid("file", why));
                }
                tx.insert_attachment(scope, &new)?.ok_or(DomainError::NotFound)
            })
            .await?;
        let this = Arc::clone(self);
        let settled = tokio::spawn(async move { this.settle(row, target.site, body).await });
        settled.await.map_err(|_| DomainError::Unavailable("the upload could not be finished"))?
    }

    /// Receives the bytes of the upload `row` and finishes its row, or
    /// removes both.
    async fn settle(&self, row: Attachment, site: SiteSettings, body: ByteStream) -> Result<Attachment, DomainError> {
        let (tenant, quota, pending) = (row.tenant_id, self.settings.quota, self.settings.max_size);
        match self.receive(&row, &site, body).await {
            Ok(facts) => {
                let (id, done) = (row.id, facts.clone());
                match self.db.write(move |tx| Ok(tx.finish_attachment(tenant, id, &done, quota, pending)?)).await {
                    Ok(Finished::Done) => Ok(Attachment { facts: Some(facts), ..row }),
                    Ok(Finished::OverQuota) => {
                        self.discard(&row).await;
                        Err(DomainError::QuotaExceeded)
                    }
                    Ok(Finished::Gone) => {
                        self.discard(&row).await;
                        Err(DomainError::NotFound)
                    }
                    Err(e) => Err(self.discard(&row).await.unwrap_or(e)),
                }
            }
            Err(e) => Err(self.discard(&row).await.unwrap_or(e)),
        }
    }

    /// Stores the bytes and learns what they are.
    async fn receive(&self, row: &Attachment, site: &SiteSettings, body: ByteStream) -> Result<AttachmentFacts, DomainError> {
        let max = self.settings.max_size;
        let stored = self.files.put(&row.storage_key, body, max).await.map_err(|e| match e {
            FileError::TooLarge(max) => DomainError::TooLarge(max),
            FileError::Cut(why) => DomainError::invalid("file", format!("did not arrive whole: {why}")),
            FileError::TimedOut => DomainError::UploadTimedOut,
            other => store_failed(&other),
        })?;
        if stored.size == 0 {
            return Err(DomainError::invalid("file", "is empty"));
        }
        let whole = u64::try_from(stored.head.len()).unwrap_or(u64::MAX) >= stored.size;
        let sniffed = kinds::sniff(&stored.head, whole).filter(|s| site.takes(s.kind)).ok_or_else(|| refused(site))?;
        let picture = if sniffed.picture { self.picture(row, sniffed.content_type, stored.size, &stored.head).await? } else { None };
        Ok(AttachmentFacts {
            content_type: sniffed.content_type.to_owned(),
            size: stored.size,
            picture,
            name: sniffed.fitting_name(&row.name),
        })
    }

    /// A picture's size and thumbnail; `None` when it is too large to
    /// decode, does not decode, or the decoder is busy for too long (it is
    /// then a download like any file). What the first bytes tell is
    /// checked before the file is read back; one picture at a time is.
    async fn picture(
        &self,
        row: &Attachment,
        content_type: &'static str,
        size: u64,
        head: &[u8],
    ) -> Result<Option<PictureFacts>, DomainError> {
        if images::dimensions(head, content_type).is_some_and(|(w, h)| !images::decodable(w, h)) || size > images::MAX_FILE {
            return Ok(None);
        }
        let Ok(Ok(turn)) = tokio::time::timeout(DECODER_WAIT, Arc::clone(&self.decoding).acquire_owned()).await else { return Ok(None) };
        let (_, mut stream) = self.files.get(&row.storage_key).await.map_err(|e| store_failed(&e))?;
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        while let Some(chunk) = stream.next().await {
            bytes.extend_from_slice(&chunk.map_err(|e| store_failed(&FileError::Store(e.to_string())))?);
            if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > images::MAX_FILE {
                return Ok(None);
            }
        }
        // A decoder that panics on a hostile file has not read a picture.
        // The turn goes with the decoding: it ends when decoding does.
        let decoded = tokio::task::spawn_blocking(move || {
            let _turn = turn;
            images::inspect(&bytes, content_type)
        });
        let Ok(Ok(picture)) = decoded.await else { return Ok(None) };
        let thumbnail_size = u64::try_from(picture.thumbnail.len()).unwrap_or(u64::MAX);
        let body = futures::stream::once(async move { Ok(bytes::Bytes::from(picture.thumbnail)) }).boxed();
        // Ours, at most 320 pixels a side: no limit of the client's applies.
        self.files.put(&row.thumbnail_key(), body, u64::MAX).await.map_err(|e| store_failed(&e))?;
        Ok(Some(PictureFacts { width: picture.width, height: picture.height, thumbnail_size }))
    }

    /// Removes an upload that will not be kept: its row, then its
    /// objects (left queued for the sweep when the store cannot take the
    /// removal now). An upload is never named before it is finished, so a
    /// row already gone went with its erased conversation, perhaps while
    /// its bytes were being stored: its objects are queued all the same,
    /// and `NotFound` is what the uploader is told (the store's failure
    /// then came of the erasure).
    async fn discard(&self, row: &Attachment) -> Option<DomainError> {
        let (tenant, id, key, now) = (row.tenant_id, row.id, row.storage_key.clone(), self.clock.now());
        let queued = self
            .db
            .write(move |tx| match tx.remove_upload(tenant, id, now, removal_due(now))? {
                Some(removal) => Ok((removal, false)),
                None => Ok((tx.queue_file_removal(tenant, &key, now, removal_due(now))?, true)),
            })
            .await;
        match queued {
            Ok((removal, gone)) => {
                self.remove_files([removal]).await;
                gone.then_some(DomainError::NotFound)
            }
            Err(e) => {
                tracing::warn!(error = %e, "an upload's row could not be removed; the sweep will try again");
                None
            }
        }
    }

    /// The file a signed link names.
    pub async fn open(&self, public_id: String, variant: Variant, expires: i64, sig: &str) -> Result<Download, DomainError> {
        self.links.check(&public_id, variant, expires, sig).map_err(|e| match e {
            LinkError::Expired => DomainError::Forbidden("this link has expired"),
            LinkError::BadSignature => DomainError::Forbidden("this link is not valid"),
        })?;
        let row = self.db.read(move |r| Ok(r.attachment_by_public_id(&public_id)?)).await?.ok_or(DomainError::NotFound)?;
        let described = row.describe().ok_or(DomainError::NotFound)?;
        let (key, disposition) = match variant {
            Variant::Original if described.inline() => (row.storage_key.clone(), "inline"),
            Variant::Original => (row.storage_key.clone(), "attachment"),
            Variant::Thumbnail if described.inline() => (row.thumbnail_key(), "inline"),
            Variant::Thumbnail => return Err(DomainError::NotFound),
        };
        let disposition = names::content_disposition(disposition, &described.name);
        let (size, body) = self.files.get(&key).await.map_err(|e| match e {
            FileError::NotFound => DomainError::NotFound,
            other => store_failed(&other),
        })?;
        let (content_type, body) = match variant {
            Variant::Original if described.inline() => (inline_type(&described.content_type), body),
            Variant::Original => ("application/octet-stream", body),
            Variant::Thumbnail => sniffed_thumbnail(body).await?,
        };
        Ok(Download { size, body, content_type, disposition, expires })
    }

    /// Removes uploads no message named within [`super::UNNAMED_FOR`],
    /// a batch at a time: each row first (so a message naming it at this
    /// moment keeps it), then its objects. Returns how many went.
    pub async fn sweep(&self, limit: u32) -> Result<usize, DomainError> {
        let now = self.clock.now();
        let cutoff = now.minus(super::UNNAMED_FOR);
        let stale = self.db.write(move |tx| Ok(tx.stale_uploads(cutoff, limit)?)).await?;
        let mut removed = 0;
        for row in stale {
            let (tenant, id) = (row.tenant_id, row.id);
            let Some(removal) = self.db.write(move |tx| Ok(tx.remove_upload(tenant, id, now, removal_due(now))?)).await? else { continue };
            removed += 1;
            self.remove_files([removal]).await;
        }
        Ok(removed)
    }

    /// Removes the objects of files whose rows are gone, and forgets each
    /// removal once they are. One the store refuses stays queued, to be
    /// tried again later (see [`Self::remove_queued`]); the rest go on.
    /// Bounded by [`REMOVE_WITHIN`]: what is not done by then waits in
    /// the queue too, so a slow store cannot hold the caller.
    pub async fn remove_files(&self, removals: impl IntoIterator<Item = FileRemoval>) {
        let removals: Vec<FileRemoval> = removals.into_iter().collect();
        let all = async {
            for removal in &removals {
                self.remove(removal).await;
            }
        };
        if tokio::time::timeout(REMOVE_WITHIN, all).await.is_err() {
            tracing::warn!("the file store is slow to remove files; the sweep will finish");
        }
    }

    /// Works off the queue of objects to remove whose turn has come, a
    /// batch at a time; returns how many it tried. Removals are safe to
    /// repeat (a missing object counts as removed), so two instances
    /// working the queue at once do no harm.
    pub async fn remove_queued(&self, limit: u32) -> Result<usize, DomainError> {
        let now = self.clock.now();
        let due = self.db.read(move |r| Ok(r.file_removals_due(now, limit)?)).await?;
        for removal in &due {
            self.remove(removal).await;
        }
        Ok(due.len())
    }

    /// Removes one file's objects and forgets its removal; when the store
    /// refuses, counts the refusal and waits longer before the next try.
    async fn remove(&self, removal: &FileRemoval) {
        let id = removal.id;
        for key in removal.keys() {
            if let Err(e) = self.files.delete(&key).await {
                let wait = REMOVAL_RETRY.saturating_mul(2u32.saturating_pow(removal.attempts.min(16))).min(REMOVAL_RETRY_AT_MOST);
                let next = self.clock.now().plus(wait);
                tracing::warn!(error = %e, key, attempts = removal.attempts + 1, "the file store refused to remove a file; trying again later");
                if let Err(e) = self.db.write(move |tx| Ok(tx.file_removal_failed(id, next)?)).await {
                    tracing::warn!(error = %e, "a refused file removal could not be recorded; the sweep will try again");
                }
                return;
            }
        }
        if let Err(e) = self.db.write(move |tx| Ok(tx.file_removed(id)?)).await {
            tracing::warn!(error = %e, "a removed file stays queued; the sweep will remove it again");
        }
    }
}

/// The picture types sent as themselves.
fn inline_type(content_type: &str) -> &'static str {
    kinds::PICTURES.into_iter().find(|t| *t == content_type).unwrap_or("application/octet-stream")
}

/// A thumbnail's type, read from its first bytes (JPEG, or PNG for a
/// picture with transparency), with those bytes put back in front.
async fn sniffed_thumbnail(mut body: ByteStream) -> Result<(&'static str, ByteStream), DomainError> {
    let first = match body.next().await {
        Some(chunk) => chunk.map_err(|e| store_failed(&FileError::Store(e.to_string())))?,
        None => bytes::Bytes::new(),
    };
    let content_type = match infer::get(&first).map(|t| t.mime_type()) {
        Some("image/png") => "image/png",
        _ => "image/jpeg",
    };
    Ok((content_type, futures::stream::once(async move { Ok(first) }).chain(body).boxed()))
}

fn store_failed(e: &FileError) -> DomainError {
    tracing::error!(error = %e, "the file store failed");
    DomainError::Unavailable("the file store cannot be reached")
}

/// The refusal of a type the site does not take, naming what it takes.
fn refused(site: &SiteSettings) -> DomainError {
    let taken: Vec<&str> = FileKind::ALL.into_iter().filter(|k| site.takes(*k)).map(FileKind::as_str).collect();
    let taken = if taken.is_empty() { "no files".to_owned() } else { taken.join(", ") };
    DomainError::invalid("file", format!("is not a type this site takes ({taken})"))
}
