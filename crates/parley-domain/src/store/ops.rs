//! The operations a unit of work may use, one trait per aggregate.
//!
//! [`ReadTx`] and [`WriteTx`] are the sum of these traits, so a unit sees
//! them all; a backend implements each aggregate in a file of its own. An
//! operation belongs to the aggregate whose rows it changes or returns.
//! Code that calls these through `&mut dyn ReadTx` imports them with
//! `use crate::store::ops::*`.

use std::time::Duration;

use crate::audit::{AuditEntry, NewAuditEntry};
use crate::canned::{CannedResponse, CannedText};
use crate::clock::Timestamp;
use crate::continuity::{ClaimedMail, MailContext, MailThread, SentThread, VisitorRead};
use crate::events::OutboxEvent;
use crate::feed::{FeedBlocker, FeedEntry, FeedItem, FeedMark, Position};
use crate::model::*;
use crate::push::schedule::PushStep;
use crate::push::{ClaimedPush, DuePush, QueuedPush};
use crate::search::{SearchHit, SearchQuery};
use crate::verification::channels::Channel;
use crate::verification::{Challenge, ChallengeCount, ChallengeStatus, Method, NewChallenge, TestCount};
use crate::webhooks::fairness::{DueDelivery, EndpointHealth, Pause};
use crate::webhooks::{AttemptRecord, ClaimedDelivery, Delivery, NewWebhook, Webhook};

use super::{MessagePage, OutboxMessage, OutboxStats, Prunable, StoreResult};

/// Tenants, sites and installations.
pub trait TenancyRead {
    /// Resolves a public installation token. The only unscoped lookup of the
    /// widget side: its result *is* the scope for everything after it.
    fn installation_by_token(&mut self, token: &str) -> StoreResult<Option<InstallationContext>>;
    fn tenant_by_slug(&mut self, slug: &str) -> StoreResult<Option<Tenant>>;
    fn tenant(&mut self, id: TenantId) -> StoreResult<Option<Tenant>>;
    fn sites(&mut self, tenant: TenantId) -> StoreResult<Vec<Site>>;
    fn site(&mut self, tenant: TenantId, id: SiteId) -> StoreResult<Option<Site>>;
    fn installations(&mut self, scope: SiteScope) -> StoreResult<Vec<Installation>>;
    fn installation(&mut self, tenant: TenantId, id: InstallationId) -> StoreResult<Option<Installation>>;
}

pub trait TenancyWrite: TenancyRead {
    /// Healthy installations whose last heartbeat is older than
    /// `cutoff`, across all tenants (for the sweeper), locked until the
    /// commit. Rows another unit holds are skipped: it is changing them,
    /// and two sweeping instances never take the same row.
    fn stale_candidates(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<Vec<InstallationContext>>;
    fn insert_tenant(&mut self, tenant: &NewTenant) -> StoreResult<Tenant>;
    fn insert_site(&mut self, tenant: TenantId, site: &NewSite) -> StoreResult<Site>;
    fn insert_installation(&mut self, scope: SiteScope, installation: &NewInstallation) -> StoreResult<Installation>;
    fn set_installation_enabled(&mut self, tenant: TenantId, id: InstallationId, enabled: bool) -> StoreResult<()>;
    /// The site, held until the unit ends (a change reads it whole and
    /// writes it whole).
    fn lock_site(&mut self, tenant: TenantId, id: SiteId) -> StoreResult<Option<Site>>;
    /// Saves what an admin may change of the site: its name, domains,
    /// the widget's look and texts, language, business hours and file
    /// kinds.
    fn update_site(&mut self, tenant: TenantId, site: &Site) -> StoreResult<()>;
    fn set_installation_identity(
        &mut self,
        tenant: TenantId,
        id: InstallationId,
        identity: &crate::identity::IdentitySettings,
    ) -> StoreResult<()>;
    fn set_heartbeat_status(&mut self, scope: SiteScope, id: InstallationId, status: InstallationStatus) -> StoreResult<()>;
    fn record_heartbeat(
        &mut self,
        scope: SiteScope,
        id: InstallationId,
        heartbeat: &Heartbeat,
        status: InstallationStatus,
    ) -> StoreResult<()>;
}

/// Operators, their site memberships and their bearer tokens.
pub trait OperatorsRead {
    /// Resolves a bearer token digest: the entry point of the operator side.
    fn session(&mut self, token_hash: &[u8]) -> StoreResult<Option<Session>>;
    /// Whether the token with this digest is live at `now`, of an active
    /// operator with this scope: what a stream asks at every read, in one
    /// statement.
    fn token_holds(&mut self, token_hash: &[u8], scope: OperatorScope, now: Timestamp) -> StoreResult<bool>;
    /// Finds an operator and its password hash by email, for login only.
    fn login_operator(&mut self, email: &str) -> StoreResult<Option<(Operator, String)>>;
    fn operators(&mut self, tenant: TenantId) -> StoreResult<Vec<Operator>>;
    fn operator(&mut self, tenant: TenantId, id: OperatorId) -> StoreResult<Option<Operator>>;
    fn operator_by_email(&mut self, tenant: TenantId, email: &str) -> StoreResult<Option<Operator>>;
    /// The operator's personal access tokens not revoked, newest first.
    fn personal_tokens(&mut self, tenant: TenantId, operator: OperatorId) -> StoreResult<Vec<PersonalToken>>;
    /// The operator's password hash (empty for an invited operator that
    /// has not chosen one), for checking its current password.
    fn password_hash(&mut self, tenant: TenantId, operator: OperatorId) -> StoreResult<Option<String>>;
    /// The operator's sign-ins that still hold at `now`, latest used first.
    fn sign_ins(&mut self, tenant: TenantId, operator: OperatorId, now: Timestamp) -> StoreResult<Vec<SignInRecord>>;
}

pub trait OperatorsWrite: OperatorsRead {
    fn insert_operator(&mut self, tenant: TenantId, operator: &NewOperator) -> StoreResult<Operator>;
    fn update_operator(&mut self, tenant: TenantId, id: OperatorId, changes: &OperatorChanges) -> StoreResult<()>;
    fn insert_operator_token(&mut self, tenant: TenantId, token: &NewOperatorToken) -> StoreResult<TokenId>;
    /// Revokes one of the operator's personal tokens; false when it has
    /// no such live token.
    fn revoke_personal_token(&mut self, tenant: TenantId, operator: OperatorId, token: TokenId, at: Timestamp) -> StoreResult<bool>;
    /// Records that the token authenticated a request at `at`, unless it
    /// was recorded less than a minute before.
    fn touch_token(&mut self, tenant: TenantId, token: TokenId, at: Timestamp) -> StoreResult<()>;
    fn revoke_token(&mut self, tenant: TenantId, token: TokenId, at: Timestamp) -> StoreResult<()>;
    /// Revokes every live token of an operator at once.
    fn revoke_operator_tokens(&mut self, tenant: TenantId, operator: OperatorId, at: Timestamp) -> StoreResult<()>;
    /// Revokes every live token of the operator but `keep` (the sign-in
    /// that changed its own password), with their devices.
    fn revoke_other_tokens(&mut self, tenant: TenantId, operator: OperatorId, keep: TokenId, at: Timestamp) -> StoreResult<()>;
    /// Revokes one of the operator's own live sign-ins, of any kind, with
    /// its devices; its kind, or none when it has no such one.
    fn revoke_sign_in(&mut self, tenant: TenantId, operator: OperatorId, token: TokenId, at: Timestamp) -> StoreResult<Option<TokenKind>>;
}

/// Set-password links (invitations and resets).
pub trait PasswordLinksRead {
    /// The link with this digest, whatever its state; inside a write unit
    /// it stays locked until the unit ends.
    fn password_link(&mut self, token_hash: &[u8]) -> StoreResult<Option<PasswordLink>>;
}

pub trait PasswordLinksWrite: PasswordLinksRead {
    fn insert_password_link(&mut self, tenant: TenantId, link: &NewPasswordLink) -> StoreResult<()>;
    /// Spends every unused link of the operator.
    fn spend_password_links(&mut self, tenant: TenantId, operator: OperatorId, at: Timestamp) -> StoreResult<()>;
}

/// Visitors, conversations and their messages.
pub trait ConversationsRead {
    fn visitor_by_uuid(&mut self, scope: SiteScope, uuid: &str) -> StoreResult<Option<Visitor>>;
    fn visitor(&mut self, scope: SiteScope, id: VisitorId) -> StoreResult<Option<Visitor>>;
    /// The visitor the site's user `user_id` is, locked inside a write unit.
    fn visitor_by_user_id(&mut self, scope: SiteScope, user_id: &str) -> StoreResult<Option<Visitor>>;
    /// The visitor's conversation with the latest activity.
    fn latest_conversation_of(&mut self, scope: SiteScope, visitor: VisitorId) -> StoreResult<Option<Conversation>>;
    /// Inside a write unit the conversation stays locked until the commit,
    /// so what the unit writes back is based on what it read.
    fn conversation_by_public_id(&mut self, scope: ConversationScope, public_id: &str) -> StoreResult<Option<Conversation>>;
    /// The conversation with its visitor, both locked inside a write unit
    /// like `conversation_by_public_id`: a visitor's message needs both,
    /// and one statement spares a round trip to a database elsewhere.
    fn conversation_and_visitor_by_public_id(
        &mut self,
        scope: ConversationScope,
        public_id: &str,
    ) -> StoreResult<Option<(Conversation, Visitor)>>;
    /// Locked like `conversation_by_public_id` inside a write unit.
    fn conversation(&mut self, scope: ConversationScope, id: ConversationId) -> StoreResult<Option<Conversation>>;
    fn conversation_details(&mut self, scope: ConversationScope, id: ConversationId) -> StoreResult<Option<ConversationDetails>>;
    /// Most recent activity first.
    fn conversations(
        &mut self,
        scope: ConversationScope,
        filter: StatusFilter,
        offset: u64,
        limit: u32,
    ) -> StoreResult<Vec<ConversationDetails>>;
    fn count_conversations(&mut self, scope: ConversationScope, filter: StatusFilter) -> StoreResult<u64>;
    fn messages(&mut self, scope: ConversationScope, conversation: ConversationId, page: MessagePage) -> StoreResult<Vec<Message>>;
    /// The message `sender` sent earlier in the conversation under this
    /// client id, if any: a repeat of it creates nothing.
    fn client_message(
        &mut self,
        scope: ConversationScope,
        conversation: ConversationId,
        sender: &Sender,
        client_message_id: &str,
    ) -> StoreResult<Option<Message>>;
    /// The first message, sent with this client id, of one of the
    /// visitor's conversations: a repeat of the open that made it.
    fn visitor_client_message(&mut self, scope: SiteScope, visitor: VisitorId, client_message_id: &str) -> StoreResult<Option<Message>>;
    /// A conversation found by its public id with a page of its messages,
    /// in one statement: a widget's poll, the request it makes most.
    fn conversation_with_messages(
        &mut self,
        scope: ConversationScope,
        public_id: &str,
        page: MessagePage,
    ) -> StoreResult<Option<(Conversation, Vec<Message>)>>;
    /// Conversations not closed, across all tenants (for metrics).
    fn count_open_conversations(&mut self) -> StoreResult<u64>;
}

pub trait ConversationsWrite: ConversationsRead {
    /// Folds what the database recorded of conversations' comings and
    /// goings for the inbox's totals into one row per group, so that a
    /// total reads a few rows per site (the sweeper, each pass).
    fn fold_conversation_counts(&mut self) -> StoreResult<()>;
    /// Open conversations without a message since `cutoff`, across all
    /// tenants (for the sweeper), with their tenants, locked until the
    /// commit. A conversation another unit holds is skipped: it is taking
    /// a message, so it is not idle, and two sweeping instances never
    /// close the same one.
    fn idle_conversations(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<Vec<(Tenant, Conversation)>>;
    fn insert_visitor(&mut self, scope: SiteScope, visitor: &NewVisitor) -> StoreResult<Visitor>;
    fn update_visitor_profile(&mut self, scope: SiteScope, id: VisitorId, profile: &VisitorProfile, at: Timestamp) -> StoreResult<()>;
    /// Marks the conversation as having had its automatic reply outside
    /// business hours: `false` when it had one already and no operator
    /// has answered since.
    fn mark_away_replied(&mut self, scope: SiteScope, conversation: ConversationId, at: Timestamp) -> StoreResult<bool>;
    /// Saves the visitor's user id, site-vouched email and attributes.
    fn update_visitor_identity(&mut self, scope: SiteScope, visitor: &Visitor, at: Timestamp) -> StoreResult<()>;
    fn insert_conversation(&mut self, scope: SiteScope, conversation: &NewConversation) -> StoreResult<Conversation>;
    /// Saves status, assignee, activity time and closing time.
    fn update_conversation(&mut self, scope: ConversationScope, conversation: &Conversation) -> StoreResult<()>;
    /// Message ids increase in commit order within a conversation, so a
    /// poll for messages after an id never skips one committed later.
    /// `attachments`: what the message says of the files it names (the
    /// rows are claimed apart, with `name_attachments`). A message both
    /// sides see (neither a note nor a system line) also becomes the
    /// conversation's latest line and last activity.
    fn insert_message(&mut self, scope: ConversationScope, message: &NewMessage, attachments: &[AttachmentRef]) -> StoreResult<Message>;
}

/// Uploaded files: their rows (the bytes are in the file store).
pub trait AttachmentsRead {
    /// The attachment a signed link names, whatever its tenant: the link
    /// is the capability (see `attachments::links`).
    fn attachment_by_public_id(&mut self, public_id: &str) -> StoreResult<Option<Attachment>>;
    /// The bytes the tenant's files take, thumbnails included, an upload
    /// still being received counted as `pending` (the most it may take).
    fn files_usage(&mut self, tenant: TenantId, pending: u64) -> StoreResult<u64>;
    /// How many uploads of `uploader`'s side wait in the conversation for
    /// a message to send them (finished or not).
    fn unsent_uploads(&mut self, tenant: TenantId, conversation: ConversationId, uploader: SenderKind) -> StoreResult<u64>;
    /// Objects waiting to be removed from the file store whose turn has
    /// come, longest waiting first.
    fn file_removals_due(&mut self, now: Timestamp, limit: u32) -> StoreResult<Vec<FileRemoval>>;
}

pub trait AttachmentsWrite: AttachmentsRead {
    /// The row of an upload about to be received into conversation
    /// `new.conversation_id`; `None` when that conversation is not in
    /// `scope`.
    fn insert_attachment(&mut self, scope: ConversationScope, new: &NewAttachment) -> StoreResult<Option<Attachment>>;
    /// Records what an upload turned out to be, unless the tenant's files
    /// (other uploads being received counted as `pending` each) would
    /// then take more than `quota` bytes, or the row is gone: nothing
    /// changes then. Units finishing uploads of one tenant run one after
    /// the other, so two cannot both squeeze under the quota.
    fn finish_attachment(
        &mut self,
        tenant: TenantId,
        id: AttachmentId,
        facts: &AttachmentFacts,
        quota: u64,
        pending: u64,
    ) -> StoreResult<Finished>;
    /// A finished upload of `uploader`'s side in the conversation that no
    /// message names yet, locked until the commit.
    fn unnamed_attachment(
        &mut self,
        tenant: TenantId,
        conversation: ConversationId,
        uploader: SenderKind,
        public_id: &str,
    ) -> StoreResult<Option<Attachment>>;
    /// Removes the row of an upload no message names and queues its
    /// objects for removal: `None` when it is gone, or a message named it
    /// meanwhile (then it stays). A removal is the sweep's from `due`:
    /// until then the caller removes the objects itself.
    fn remove_upload(&mut self, tenant: TenantId, id: AttachmentId, at: Timestamp, due: Timestamp) -> StoreResult<Option<FileRemoval>>;
    /// Queues the objects under `storage_key` for removal, the sweep's
    /// from `due`.
    fn queue_file_removal(&mut self, tenant: TenantId, storage_key: &str, at: Timestamp, due: Timestamp) -> StoreResult<FileRemoval>;
    /// Forgets a removal once its objects are gone.
    fn file_removed(&mut self, id: i64) -> StoreResult<()>;
    /// Counts a refusal of the store and sets when to try again.
    fn file_removal_failed(&mut self, id: i64, next_attempt_at: Timestamp) -> StoreResult<()>;
    /// Makes `message` the one that names the attachment.
    fn name_attachment(&mut self, tenant: TenantId, id: AttachmentId, message: MessageId) -> StoreResult<()>;
    /// Uploads no message named, made before `cutoff`, across all tenants
    /// (for the sweeper), locked until the commit; rows another unit
    /// holds are skipped.
    fn stale_uploads(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<Vec<Attachment>>;
}

/// Searching conversations (see `crate::search`).
pub trait SearchRead {
    /// The conversations of `scope` that match `query`, most recent
    /// activity first, each with its latest matching message.
    fn search(&mut self, scope: ConversationScope, query: &SearchQuery, limit: u32, offset: u64) -> StoreResult<Vec<SearchHit>>;
}

/// The tenant's canned responses.
pub trait CannedRead {
    /// By shortcut.
    fn canned_responses(&mut self, tenant: TenantId) -> StoreResult<Vec<CannedResponse>>;
}

pub trait CannedWrite: CannedRead {
    /// The tenant's responses, by shortcut, after waiting for any other
    /// unit changing them: units that change them run one at a time.
    fn lock_canned_responses(&mut self, tenant: TenantId) -> StoreResult<Vec<CannedResponse>>;
    fn insert_canned_response(&mut self, tenant: TenantId, text: &CannedText, at: Timestamp) -> StoreResult<CannedResponse>;
    fn update_canned_response(&mut self, tenant: TenantId, id: CannedId, text: &CannedText, at: Timestamp) -> StoreResult<()>;
    /// The shortcut it had; none when there is no such response.
    fn delete_canned_response(&mut self, tenant: TenantId, id: CannedId) -> StoreResult<Option<String>>;
}

/// The tenant's audit log.
pub trait AuditRead {
    /// Newest first.
    fn audit_entries(&mut self, tenant: TenantId, limit: u32, offset: u64) -> StoreResult<Vec<AuditEntry>>;
    fn count_audit_entries(&mut self, tenant: TenantId) -> StoreResult<u64>;
}

pub trait AuditWrite: AuditRead {
    fn insert_audit_entry(&mut self, tenant: TenantId, entry: &NewAuditEntry<'_>) -> StoreResult<()>;
}

/// Erasing conversations.
pub trait ErasureWrite {
    /// Conversations whose last message is before `cutoff`, across all
    /// tenants (for the retention sweep), locked until the commit; one
    /// another unit holds is taking a message, and is skipped.
    fn expired_conversations(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<Vec<(TenantId, ConversationId)>>;
    /// Removes the conversation and every row that records it (its feed
    /// entries become empty tombstones), and its visitor when no other
    /// conversation is theirs. The attachments' objects are queued for
    /// removal (the sweep's, from `due`) and returned. The caller has
    /// locked the conversation.
    fn erase_conversation(&mut self, tenant: TenantId, id: ConversationId, at: Timestamp, due: Timestamp) -> StoreResult<Vec<FileRemoval>>;
}

/// Verification challenges, what they established, and the demo outbox.
pub trait VerificationRead {
    /// Locked until the commit inside a write unit, so two answers to one
    /// challenge are counted one after the other.
    fn challenge(&mut self, scope: SiteScope, conversation: ConversationId, id: ChallengeId) -> StoreResult<Option<Challenge>>;
    /// Resolves a magic link's challenge id: the entry point of a link,
    /// whose long code is the capability. Locked like `challenge`.
    fn challenge_by_id(&mut self, id: ChallengeId) -> StoreResult<Option<Challenge>>;
    /// Creation times of the challenges `count` selects since `since`,
    /// newest first, at most `limit`.
    fn challenge_times(&mut self, tenant: TenantId, count: &ChallengeCount, since: Timestamp, limit: u32) -> StoreResult<Vec<Timestamp>>;
    /// The demo outbox, newest first.
    fn sandbox_outbox(&mut self, tenant: TenantId, limit: u32) -> StoreResult<Vec<OutboxMessage>>;
    /// When the test messages `count` names were sent, newest first, at
    /// most `limit`, those after `since`. In a write unit, as
    /// `challenge_times`, it waits for other units that count sends.
    fn test_send_times(&mut self, tenant: TenantId, count: &TestCount, since: Timestamp, limit: u32) -> StoreResult<Vec<Timestamp>>;
}

pub trait VerificationWrite: VerificationRead {
    /// Creates a challenge, superseding the conversation's active ones.
    fn insert_challenge(&mut self, scope: SiteScope, challenge: &NewChallenge) -> StoreResult<ChallengeId>;
    /// Records a test message, counted by `test_send_times`.
    fn insert_test_send(&mut self, tenant: TenantId, channel: Channel, recipient: &str, at: Timestamp) -> StoreResult<()>;
    fn update_challenge(
        &mut self,
        scope: SiteScope,
        id: ChallengeId,
        status: ChallengeStatus,
        attempts: u32,
        completed_at: Option<Timestamp>,
    ) -> StoreResult<()>;
    /// Records what a verification established on the visitor (method,
    /// target, time) and the conversation; the profile is saved apart.
    fn mark_verified(
        &mut self,
        scope: SiteScope,
        visitor: VisitorId,
        conversation: ConversationId,
        method: Method,
        target: &str,
        at: Timestamp,
    ) -> StoreResult<()>;
    /// Forgets a visitor's verification and that of its conversations
    /// (the verified email or phone changed).
    fn clear_verification(&mut self, scope: SiteScope, visitor: VisitorId) -> StoreResult<()>;
    fn insert_outbox_message(&mut self, tenant: TenantId, message: &OutboxMessage) -> StoreResult<()>;
}

/// Webhook events, endpoints, deliveries and attempts.
pub trait WebhooksRead {
    /// The tenant's most recent events, oldest of them first.
    fn recent_events(&mut self, tenant: TenantId, limit: u32) -> StoreResult<Vec<OutboxEvent>>;
    fn webhooks(&mut self, tenant: TenantId) -> StoreResult<Vec<Webhook>>;
    fn webhook(&mut self, tenant: TenantId, id: WebhookId) -> StoreResult<Option<Webhook>>;
    /// Newest first, each with its attempts.
    fn deliveries(&mut self, tenant: TenantId, endpoint: WebhookId, offset: u64, limit: u32) -> StoreResult<Vec<Delivery>>;
    fn count_deliveries(&mut self, tenant: TenantId, endpoint: WebhookId) -> StoreResult<u64>;
    /// Whether a test event to this endpoint still waits to be sent (test
    /// events are the only ones outside the fan-out that have deliveries).
    fn pending_test(&mut self, tenant: TenantId, endpoint: WebhookId) -> StoreResult<bool>;
    fn delivery(&mut self, tenant: TenantId, endpoint: WebhookId, id: DeliveryId) -> StoreResult<Option<Delivery>>;
    fn outbox_stats(&mut self) -> StoreResult<OutboxStats>;
    /// When the longest-waiting delivery that is due at `now` and held by
    /// no worker fell due: how far delivery lags behind.
    fn oldest_due_delivery(&mut self, now: Timestamp) -> StoreResult<Option<Timestamp>>;
    /// When the next pending delivery falls due, across all tenants (for
    /// the worker, which serves every tenant), paused endpoints counted
    /// from the end of their pause. Leases are not looked at, so one index
    /// lookup per endpoint answers however long the backlog: while an
    /// endpoint's earliest delivery is in flight the answer is that
    /// delivery's (past) due time, and the worker waits for an attempt to
    /// end or for its poll interval, whichever comes first.
    fn next_delivery_due(&mut self) -> StoreResult<Option<Timestamp>>;
    /// Due deliveries of enabled, unpaused endpoints: for every such
    /// endpoint, its `per_endpoint` oldest. Oldest first.
    fn due_deliveries(&mut self, now: Timestamp, per_endpoint: u32) -> StoreResult<Vec<DueDelivery>>;
}

pub trait WebhooksWrite: WebhooksRead {
    fn insert_webhook(&mut self, tenant: TenantId, webhook: &NewWebhook) -> StoreResult<Webhook>;
    /// Deletes an endpoint with its deliveries; false if there was none.
    fn delete_webhook(&mut self, tenant: TenantId, id: WebhookId) -> StoreResult<bool>;
    fn rotate_webhook_secret(&mut self, tenant: TenantId, id: WebhookId, secret: &str, previous_expires_at: Timestamp) -> StoreResult<()>;
    /// A new pending delivery of the same event to the same endpoint.
    fn redeliver(&mut self, tenant: TenantId, endpoint: WebhookId, delivery: DeliveryId, at: Timestamp) -> StoreResult<Option<DeliveryId>>;
    /// A pending delivery of the event (by its public id, appended by this
    /// unit) to this endpoint alone, whatever its subscriptions: a test.
    fn deliver_to(&mut self, tenant: TenantId, endpoint: WebhookId, event_id: &str, at: Timestamp) -> StoreResult<Option<DeliveryId>>;
    /// `due_deliveries`, with the deliveries locked until the commit and
    /// those another instance is claiming skipped, so claimers never wait
    /// for one another and never both take a delivery.
    fn claimable_deliveries(&mut self, now: Timestamp, per_endpoint: u32) -> StoreResult<Vec<DueDelivery>>;
    /// Leases the chosen deliveries until `lease_until`, those still due
    /// and unleased at `now`, and returns them ready to send. A delivery
    /// whose lease ran out (its worker died) is due again.
    fn lease_deliveries(&mut self, ids: &[DeliveryId], now: Timestamp, lease_until: Timestamp) -> StoreResult<Vec<ClaimedDelivery>>;
    /// Logs an attempt and applies its consequence: delivered, retry,
    /// failed, or the endpoint disabled with its pending deliveries failed.
    fn record_attempt(&mut self, record: &AttemptRecord) -> StoreResult<()>;
    /// Counts an attempt's outcome against its endpoint: an answer clears
    /// the endpoint's failures in a row and its pauses, no answer adds a
    /// failure. Returns the endpoint's standing after the count.
    fn count_endpoint_outcome(&mut self, tenant: TenantId, endpoint: WebhookId, answered: bool) -> StoreResult<EndpointHealth>;
    /// Makes no attempt to the endpoint before `pause.until` (circuit open).
    fn pause_endpoint(&mut self, tenant: TenantId, endpoint: WebhookId, pause: Pause) -> StoreResult<()>;
    /// Fails up to `limit` deliveries still pending that were created
    /// before `created_before` (and are not out with a worker at `now`);
    /// returns how many.
    fn expire_deliveries(&mut self, created_before: Timestamp, now: Timestamp, limit: u32) -> StoreResult<usize>;
}

/// The feed: one ordered log of every change a client can see, from which
/// webhook deliveries, the live streams and catch-up read. Entries are
/// ordered by [`Position`]; reads return only entries below the
/// backend's visibility bound, so a reader that has passed a position
/// never meets an entry behind it later (see `Dialect::visible_tx`).
pub trait FeedRead {
    /// The tenant's last readable entry, with when it happened.
    fn feed_head(&mut self, tenant: TenantId) -> StoreResult<Option<(Position, Timestamp)>>;
    /// The conversation's last readable entry its visitor sees, with when
    /// it happened.
    fn visitor_feed_head(&mut self, tenant: TenantId, conversation: ConversationId) -> StoreResult<Option<(Position, Timestamp)>>;
    /// When the tenant's entry at `position` happened, if the feed still
    /// holds it.
    fn feed_entry_at(&mut self, tenant: TenantId, position: Position) -> StoreResult<Option<Timestamp>>;
    /// The entries after `after` about conversations in `scope`, oldest
    /// first, at most `limit`: with each, the conversation as it is now
    /// and the message it is about. `widget`: only those the visitor sees.
    fn feed_after(&mut self, scope: ConversationScope, after: Position, widget: bool, limit: u32) -> StoreResult<Vec<FeedItem>>;
    /// The same for one conversation.
    fn conversation_feed_after(
        &mut self,
        scope: ConversationScope,
        conversation: ConversationId,
        after: Position,
        widget: bool,
        limit: u32,
    ) -> StoreResult<Vec<FeedItem>>;
    /// Entries after `after` across all tenants, for an instance's
    /// follower, which only tells its streams where to look.
    fn feed_tail(&mut self, after: Position, limit: u32) -> StoreResult<Vec<FeedMark>>;
    /// The last readable entry across all tenants (where a follower
    /// starts), or the start of the feed.
    fn feed_end(&mut self) -> StoreResult<Position>;
    /// When the first entry that is committed but not readable yet (an
    /// older transaction is still running) happened; `None` when there is
    /// none, always on SQLite.
    fn feed_held_back_since(&mut self) -> StoreResult<Option<Timestamp>>;
    /// The session holding entries back, when entries are held back and
    /// it is one the database can name.
    fn feed_blocker(&mut self) -> StoreResult<Option<FeedBlocker>>;
}

pub trait FeedWrite: FeedRead {
    /// Appends an entry in the same transaction as its cause; a webhook
    /// event gets a pending delivery for every enabled endpoint of the
    /// tenant subscribed to its kind.
    fn append_event(&mut self, tenant: TenantId, entry: &FeedEntry) -> StoreResult<()>;
    /// Appends a webhook event about no conversation (an installation's
    /// health).
    fn insert_event(&mut self, tenant: TenantId, event: &OutboxEvent) -> StoreResult<()> {
        self.append_event(tenant, &FeedEntry::webhook_only(event.clone()))
    }
}

/// Failed sign-ins, counted in the database so that every instance
/// sharing it counts the same ones. A key is an email or a client address.
/// Write-only: counting happens in the unit that goes on to record.
pub trait LoginsWrite {
    /// Holds `keys` until the commit: another unit locking any of them
    /// waits, so two sign-ins counting the same email or address cannot
    /// both slip under its limit (PostgreSQL runs units side by side;
    /// SQLite's single writer needs nothing).
    fn lock_login_keys(&mut self, keys: &[&str]) -> StoreResult<()>;
    /// When `key` failed since `since`, oldest first, at most `limit`
    /// times.
    fn login_failures(&mut self, key: &str, since: Timestamp, limit: u32) -> StoreResult<Vec<Timestamp>>;
    /// Counts a failure (or reserves one for a check still running).
    fn insert_login_failure(&mut self, key: &str, at: Timestamp) -> StoreResult<LoginFailureId>;
    /// Takes one back: the check it stood for did not fail.
    fn delete_login_failure(&mut self, id: LoginFailureId) -> StoreResult<()>;
    /// Forgets every failure of `key` (a successful sign-in).
    fn clear_login_failures(&mut self, key: &str) -> StoreResult<()>;
    /// Removes up to `limit` failures older than `cutoff`; returns how many.
    fn prune_login_failures(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<usize>;
}

/// Service-wide state and retention.
pub trait SystemRead {
    /// Service-wide state (all tenants): a named integer.
    fn state(&mut self, key: &str) -> StoreResult<Option<i64>>;
    /// A secret of the installation itself, by name.
    fn server_key(&mut self, name: &str) -> StoreResult<Option<Vec<u8>>>;
}

pub trait SystemWrite: SystemRead {
    fn set_state(&mut self, key: &str, value: i64) -> StoreResult<()>;
    /// Keeps `secret` under `name` unless a secret of that name exists
    /// (another instance made it first): read it back after.
    fn insert_server_key(&mut self, name: &str, secret: &[u8], now: Timestamp) -> StoreResult<()>;
    /// Removes up to `limit` rows of `what` older than `cutoff`; returns
    /// how many went.
    fn prune(&mut self, what: Prunable, cutoff: Timestamp, limit: u32) -> StoreResult<usize>;
}

/// Operator notifications: the devices of sign-ins and read markers.
pub trait NotificationsRead {
    /// The operator's devices whose sign-in still holds at `now`, oldest
    /// first.
    fn devices(&mut self, tenant: TenantId, operator: OperatorId, now: Timestamp) -> StoreResult<Vec<Device>>;
    /// The operator's devices whose sign-in holds at `now`, but the one
    /// registered under `push_key`. In a write unit the operator is held
    /// until the commit, so counts taken to enforce a limit are ordered.
    fn other_devices(&mut self, tenant: TenantId, operator: OperatorId, push_key: &[u8], now: Timestamp) -> StoreResult<u64>;
    /// Open conversations of the scope with messages from the visitor
    /// after the scope's operator's read marker.
    fn unread_conversations(&mut self, scope: ConversationScope) -> StoreResult<u64>;
    /// Each tenant's oldest pushes due at `now` and not leased, at most
    /// `per_tenant` of each.
    fn due_pushes(&mut self, now: Timestamp, per_tenant: u32) -> StoreResult<Vec<DuePush>>;
    /// When the next pending push falls due (or its lease runs out).
    fn next_push_due(&mut self) -> StoreResult<Option<Timestamp>>;
}

pub trait NotificationsWrite: NotificationsRead {
    /// Registers a device for a sign-in that still holds; a device holding
    /// the same push token (of any operator) is taken over. `None` when
    /// the sign-in has ended meanwhile.
    fn insert_device(&mut self, tenant: TenantId, device: &NewDevice) -> StoreResult<Option<Device>>;
    /// Removes one of the operator's devices; whether it was there.
    fn delete_device(&mut self, tenant: TenantId, operator: OperatorId, device: DeviceId) -> StoreResult<bool>;
    /// Moves the scope's operator's marker in a conversation of the scope
    /// to `message` (never backwards). `None` when the message is not one
    /// of that conversation's.
    fn mark_read(
        &mut self,
        scope: ConversationScope,
        conversation: ConversationId,
        message: MessageId,
        at: Timestamp,
    ) -> StoreResult<Option<ReadMarker>>;
    /// Queues a push for the devices `push` names, collapsing into what
    /// each device already has pending for the conversation.
    fn queue_push(&mut self, push: &QueuedPush) -> StoreResult<()>;
    /// `due_pushes`, locked for a claim: what another instance is claiming
    /// is skipped.
    fn claimable_pushes(&mut self, now: Timestamp, per_tenant: u32) -> StoreResult<Vec<DuePush>>;
    /// Leases the chosen pushes until `lease_until` and returns those this
    /// unit leased, with what they are to say.
    fn lease_pushes(&mut self, chosen: &[DuePush], now: Timestamp, lease_until: Timestamp) -> StoreResult<Vec<ClaimedPush>>;
    /// Records how an attempt ended: sent (the device's `last_push_at`,
    /// and the next push about the conversation spaced), retried later,
    /// given up, or the device removed.
    fn finish_push(&mut self, push: &ClaimedPush, step: PushStep, now: Timestamp) -> StoreResult<()>;
}

/// Visitors who leave: their read receipts, the emails waiting for them,
/// their email threads and the widget streams open.
pub trait ContinuityRead {
    /// The tenant of a conversation known by id alone (what a reply
    /// address or an unsubscribe link names).
    fn conversation_tenant(&mut self, conversation: ConversationId) -> StoreResult<Option<TenantId>>;
    /// The conversation's email thread (empty before its first email).
    fn mail_thread(&mut self, tenant: TenantId, conversation: ConversationId) -> StoreResult<MailThread>;
    /// What the worker needs to decide and write a claimed email: the
    /// conversation with its visitor and site, its thread, until when a
    /// widget stream counts as open, and its messages (a reply's: the
    /// operator messages unread after the last emailed; a transcript's:
    /// what the visitor sees, the latest `TRANSCRIPT_LIMIT`).
    fn mail_context(&mut self, mail: &ClaimedMail) -> StoreResult<Option<MailContext>>;
    /// Until when a widget stream of the conversation counts as open (the
    /// latest any instance said).
    fn widget_open_until(&mut self, tenant: TenantId, conversation: ConversationId) -> StoreResult<Option<Timestamp>>;
    /// When the next email not out falls due: a reply `delay` after it was
    /// queued unless another time was set. Leased ones are not waited for
    /// (a lease left by a dead instance is found by the poll).
    fn next_visitor_mail_due(&mut self, delay: Duration) -> StoreResult<Option<Timestamp>>;
}

/// What became of a claimed email, as its row records it.
#[derive(Clone, Debug)]
pub enum MailFinish {
    Sent(SentThread),
    /// Not yet (too new, the visitor on the page), or again after a
    /// failure (`error`, which counts an attempt).
    Later {
        due_at: Timestamp,
        error: Option<String>,
    },
    /// Given up, or nothing to send.
    Dropped,
}

pub trait ContinuityWrite: ContinuityRead {
    /// Writes the receipts of the conversation's operator messages up to
    /// `message` the visitor had not read. `None` when the message is not
    /// one of that conversation's.
    fn mark_read_by_visitor(
        &mut self,
        scope: ConversationScope,
        conversation: ConversationId,
        message: MessageId,
        at: Timestamp,
    ) -> StoreResult<Option<VisitorRead>>;
    /// Queues the `reply` email of a conversation that was not
    /// unsubscribed, whatever its visitor's address is now (the worker
    /// decides when it falls due); one already waiting takes it in (its
    /// revision counts it).
    fn queue_reply_mail(&mut self, tenant: TenantId, conversation: ConversationId, at: Timestamp) -> StoreResult<()>;
    /// Queues the transcript, due now, and notes when it was asked for.
    fn queue_transcript(&mut self, tenant: TenantId, conversation: ConversationId, at: Timestamp) -> StoreResult<()>;
    /// Leases up to `limit` due emails until `lease_until` (what another
    /// instance is claiming is skipped).
    fn claim_visitor_mail(&mut self, now: Timestamp, delay: Duration, lease_until: Timestamp, limit: u32) -> StoreResult<Vec<ClaimedMail>>;
    /// Records what became of a claimed email while its lease holds. A
    /// reply sent while newer messages came is queued again for them.
    fn finish_visitor_mail(&mut self, mail: &ClaimedMail, finish: &MailFinish, now: Timestamp) -> StoreResult<()>;
    /// Nothing more is emailed for the conversation.
    fn unsubscribe(&mut self, tenant: TenantId, conversation: ConversationId, at: Timestamp) -> StoreResult<()>;
    /// The visitor's reply `message_id` is the thread's latest email.
    fn thread_received(&mut self, tenant: TenantId, conversation: ConversationId, message_id: &str, at: Timestamp) -> StoreResult<()>;
    /// Widget streams of these conversations count as open until `until`,
    /// as far as `instance` knows. `ended`: the last one there ended, and
    /// replies put off for it are due once no instance holds one.
    fn set_presence(&mut self, instance: &str, open: &[(TenantId, ConversationId)], until: Timestamp, ended: bool) -> StoreResult<()>;
}

/// Every read operation: what a read unit receives.
pub trait ReadTx:
    TenancyRead
    + OperatorsRead
    + ConversationsRead
    + VerificationRead
    + WebhooksRead
    + FeedRead
    + NotificationsRead
    + ContinuityRead
    + AttachmentsRead
    + CannedRead
    + AuditRead
    + PasswordLinksRead
    + SearchRead
    + SystemRead
{
}

impl<T> ReadTx for T where
    T: TenancyRead
        + OperatorsRead
        + ConversationsRead
        + VerificationRead
        + WebhooksRead
        + FeedRead
        + NotificationsRead
        + ContinuityRead
        + AttachmentsRead
        + CannedRead
        + AuditRead
        + PasswordLinksRead
        + SearchRead
        + SystemRead
{
}

/// Every operation: what a write unit receives.
pub trait WriteTx:
    ReadTx
    + TenancyWrite
    + OperatorsWrite
    + LoginsWrite
    + ConversationsWrite
    + VerificationWrite
    + WebhooksWrite
    + FeedWrite
    + NotificationsWrite
    + ContinuityWrite
    + AttachmentsWrite
    + ErasureWrite
    + CannedWrite
    + AuditWrite
    + PasswordLinksWrite
    + SystemWrite
{
}

impl<T> WriteTx for T where
    T: ReadTx
        + TenancyWrite
        + OperatorsWrite
        + LoginsWrite
        + ConversationsWrite
        + VerificationWrite
        + WebhooksWrite
        + FeedWrite
        + NotificationsWrite
        + ContinuityWrite
        + AttachmentsWrite
        + ErasureWrite
        + CannedWrite
        + AuditWrite
        + PasswordLinksWrite
        + SystemWrite
{
}
