//! The storage interface.
//!
//! A backend runs *units of work*: closures that receive a transaction
//! handle ([`ReadTx`] or [`WriteTx`]) and use its small, typed operations.
//! Domain rules are written once, inside those closures, and every backend
//! runs them unchanged. A write unit and the outbox events it records commit
//! together or not at all.
//!
//! Backends are free to batch write units: the SQLite backend runs many of
//! them in one transaction (each inside its own savepoint) and answers them
//! all after one durable commit. That is why a write unit is synchronous and
//! why its result is only delivered after the commit: nothing is
//! acknowledged before it is on disk.
//!
//! Tenant isolation lives in the signatures: every operation that reads or
//! changes tenant data takes a [`SiteScope`] or a [`TenantId`], and backends
//! put it in the `WHERE` clause.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::events::OutboxEvent;
use crate::model::*;
use crate::verification::{Challenge, ChallengeCount, ChallengeStatus, Method, NewChallenge};
use crate::webhooks::fairness::{DueDelivery, EndpointHealth, Pause};
use crate::webhooks::{AttemptRecord, ClaimedDelivery, Delivery, NewWebhook, Webhook};

/// What went wrong below the domain. The message is for logs only.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached or is shutting down.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// A uniqueness rule was broken (the named constraint or column).
    #[error("unique constraint violated: {0}")]
    Duplicate(String),
    #[error("database error: {0}")]
    Internal(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

/// Which messages a poll wants.
#[derive(Clone, Copy, Debug)]
pub struct MessagePage {
    /// Only messages with a larger id; `None` means the latest ones.
    pub after_id: Option<MessageId>,
    pub limit: u32,
    /// Whether operator-only notes are included.
    pub include_internal: bool,
}

/// What the sweeper removes once it is older than the retention.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prunable {
    /// Webhook events with their deliveries and attempts (none pending).
    Events,
    /// Bearer tokens that expired or were revoked.
    Tokens,
    /// Verification challenges.
    Challenges,
    /// The demo's outbox of emails and SMS.
    SandboxOutbox,
}

impl Prunable {
    pub const ALL: [Prunable; 4] = [Prunable::Events, Prunable::Tokens, Prunable::Challenges, Prunable::SandboxOutbox];
}

/// Numbers about webhook deliveries for the health report.
#[derive(Clone, Copy, Debug, Default)]
pub struct OutboxStats {
    /// Deliveries waiting for a (first or next) attempt.
    pub pending: u64,
    pub oldest_pending_at: Option<Timestamp>,
    /// Enabled endpoints whose pending deliveries have already failed once.
    pub failing_endpoints: u64,
}

/// Operations available inside any unit of work.
pub trait ReadTx {
    /// Resolves a public installation token. The only unscoped lookup of the
    /// widget side: its result *is* the scope for everything after it.
    fn installation_by_token(&mut self, token: &str) -> StoreResult<Option<InstallationContext>>;
    /// Resolves a bearer token digest: the entry point of the operator side.
    fn session(&mut self, token_hash: &[u8]) -> StoreResult<Option<Session>>;
    /// Finds an operator and its password hash by email, for login only.
    fn login_operator(&mut self, email: &str) -> StoreResult<Option<(Operator, String)>>;
    fn tenant_by_slug(&mut self, slug: &str) -> StoreResult<Option<Tenant>>;
    fn tenant(&mut self, id: TenantId) -> StoreResult<Option<Tenant>>;
    fn sites(&mut self, tenant: TenantId) -> StoreResult<Vec<Site>>;
    fn site(&mut self, tenant: TenantId, id: SiteId) -> StoreResult<Option<Site>>;
    fn installations(&mut self, scope: SiteScope) -> StoreResult<Vec<Installation>>;
    fn installation(&mut self, tenant: TenantId, id: InstallationId) -> StoreResult<Option<Installation>>;
    fn operators(&mut self, tenant: TenantId) -> StoreResult<Vec<Operator>>;
    fn operator(&mut self, tenant: TenantId, id: OperatorId) -> StoreResult<Option<Operator>>;
    fn operator_by_email(&mut self, tenant: TenantId, email: &str) -> StoreResult<Option<Operator>>;
    fn visitor_by_uuid(&mut self, scope: SiteScope, uuid: &str) -> StoreResult<Option<Visitor>>;
    fn visitor(&mut self, scope: SiteScope, id: VisitorId) -> StoreResult<Option<Visitor>>;
    fn conversation_by_public_id(&mut self, scope: ConversationScope, public_id: &str) -> StoreResult<Option<Conversation>>;
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
    /// A conversation found by its public id with a page of its messages,
    /// in one statement: a widget's poll, the request it makes most.
    fn conversation_with_messages(
        &mut self,
        scope: ConversationScope,
        public_id: &str,
        page: MessagePage,
    ) -> StoreResult<Option<(Conversation, Vec<Message>)>>;
    fn outbox_stats(&mut self) -> StoreResult<OutboxStats>;
    /// When the longest-waiting delivery that is due at `now` and held by
    /// no worker fell due: how far delivery lags behind.
    fn oldest_due_delivery(&mut self, now: Timestamp) -> StoreResult<Option<Timestamp>>;
    /// Service-wide state (all tenants): a named integer.
    fn state(&mut self, key: &str) -> StoreResult<Option<i64>>;
    /// Conversations not closed, across all tenants (for metrics).
    fn count_open_conversations(&mut self) -> StoreResult<u64>;
    /// Enabled, healthy installations whose last heartbeat is older than
    /// `cutoff`, across all tenants (for the sweeper).
    fn stale_candidates(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<Vec<InstallationContext>>;
    /// Open conversations without a message since `cutoff`, across all
    /// tenants (for the sweeper), with their tenants.
    fn idle_conversations(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<Vec<(Tenant, Conversation)>>;
    /// The tenant's most recent events, oldest of them first.
    fn recent_events(&mut self, tenant: TenantId, limit: u32) -> StoreResult<Vec<OutboxEvent>>;
    fn webhooks(&mut self, tenant: TenantId) -> StoreResult<Vec<Webhook>>;
    fn webhook(&mut self, tenant: TenantId, id: WebhookId) -> StoreResult<Option<Webhook>>;
    /// Newest first, each with its attempts.
    fn deliveries(&mut self, tenant: TenantId, endpoint: WebhookId, offset: u64, limit: u32) -> StoreResult<Vec<Delivery>>;
    fn count_deliveries(&mut self, tenant: TenantId, endpoint: WebhookId) -> StoreResult<u64>;
    fn delivery(&mut self, tenant: TenantId, endpoint: WebhookId, id: i64) -> StoreResult<Option<Delivery>>;
    fn challenge(&mut self, scope: SiteScope, conversation: ConversationId, id: i64) -> StoreResult<Option<Challenge>>;
    /// Resolves a magic link's challenge id: the entry point of a link,
    /// whose long code is the capability.
    fn challenge_by_id(&mut self, id: i64) -> StoreResult<Option<Challenge>>;
    /// Creation times of the challenges `count` selects since `since`,
    /// newest first, at most `limit`.
    fn challenge_times(&mut self, tenant: TenantId, count: &ChallengeCount, since: Timestamp, limit: u32) -> StoreResult<Vec<Timestamp>>;
    /// The demo outbox, newest first.
    fn sandbox_outbox(&mut self, tenant: TenantId, limit: u32) -> StoreResult<Vec<OutboxMessage>>;
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

/// Operations that change data; only available inside a write unit.
pub trait WriteTx: ReadTx {
    fn insert_tenant(&mut self, tenant: &NewTenant) -> StoreResult<Tenant>;
    fn insert_site(&mut self, tenant: TenantId, site: &NewSite) -> StoreResult<Site>;
    fn insert_installation(&mut self, scope: SiteScope, installation: &NewInstallation) -> StoreResult<Installation>;
    fn set_installation_enabled(&mut self, tenant: TenantId, id: InstallationId, enabled: bool) -> StoreResult<()>;
    /// Forgets a visitor's verification and that of its conversations
    /// (the verified email or phone changed).
    fn clear_verification(&mut self, scope: SiteScope, visitor: VisitorId) -> StoreResult<()>;
    fn set_heartbeat_status(&mut self, scope: SiteScope, id: InstallationId, status: InstallationStatus) -> StoreResult<()>;
    fn set_state(&mut self, key: &str, value: i64) -> StoreResult<()>;
    fn record_heartbeat(
        &mut self,
        scope: SiteScope,
        id: InstallationId,
        heartbeat: &Heartbeat,
        status: InstallationStatus,
    ) -> StoreResult<()>;
    fn insert_operator(&mut self, tenant: TenantId, operator: &NewOperator) -> StoreResult<Operator>;
    fn update_operator(&mut self, tenant: TenantId, id: OperatorId, changes: &OperatorChanges) -> StoreResult<()>;
    fn insert_operator_token(&mut self, tenant: TenantId, token: &NewOperatorToken) -> StoreResult<()>;
    fn revoke_token(&mut self, tenant: TenantId, token_id: i64, at: Timestamp) -> StoreResult<()>;
    /// Revokes every live token of an operator at once.
    fn revoke_operator_tokens(&mut self, tenant: TenantId, operator: OperatorId, at: Timestamp) -> StoreResult<()>;
    fn insert_visitor(&mut self, scope: SiteScope, visitor: &NewVisitor) -> StoreResult<Visitor>;
    fn update_visitor_profile(&mut self, scope: SiteScope, id: VisitorId, profile: &VisitorProfile, at: Timestamp) -> StoreResult<()>;
    fn insert_conversation(&mut self, scope: SiteScope, conversation: &NewConversation) -> StoreResult<Conversation>;
    /// Saves status, assignee, activity time and closing time.
    fn update_conversation(&mut self, scope: ConversationScope, conversation: &Conversation) -> StoreResult<()>;
    fn insert_message(&mut self, scope: ConversationScope, message: &NewMessage) -> StoreResult<Message>;
    /// Creates a challenge, superseding the conversation's active ones.
    fn insert_challenge(&mut self, scope: SiteScope, challenge: &NewChallenge) -> StoreResult<i64>;
    fn update_challenge(
        &mut self,
        scope: SiteScope,
        id: i64,
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
    fn insert_outbox_message(&mut self, tenant: TenantId, message: &OutboxMessage) -> StoreResult<()>;
    /// Records a webhook event in the same transaction as its cause, with a
    /// pending delivery for every enabled endpoint subscribed to its kind.
    fn insert_event(&mut self, tenant: TenantId, event: &OutboxEvent) -> StoreResult<()>;
    fn insert_webhook(&mut self, tenant: TenantId, webhook: &NewWebhook) -> StoreResult<Webhook>;
    /// Deletes an endpoint with its deliveries; false if there was none.
    fn delete_webhook(&mut self, tenant: TenantId, id: WebhookId) -> StoreResult<bool>;
    fn rotate_webhook_secret(&mut self, tenant: TenantId, id: WebhookId, secret: &str, previous_expires_at: Timestamp) -> StoreResult<()>;
    /// A new pending delivery of the same event to the same endpoint.
    fn redeliver(&mut self, tenant: TenantId, endpoint: WebhookId, delivery: i64, at: Timestamp) -> StoreResult<Option<i64>>;
    /// Leases the chosen deliveries until `lease_until`, those still due
    /// and unleased at `now`, and returns them ready to send. A delivery
    /// whose lease ran out (its worker died) is due again.
    fn lease_deliveries(&mut self, ids: &[i64], now: Timestamp, lease_until: Timestamp) -> StoreResult<Vec<ClaimedDelivery>>;
    /// Logs an attempt and applies its consequence: delivered, retry,
    /// failed, or the endpoint disabled with its pending deliveries failed.
    fn record_attempt(&mut self, record: &AttemptRecord) -> StoreResult<()>;
    /// Counts an attempt's outcome against its endpoint: an answer clears
    /// the endpoint's failures in a row and its pauses, no answer adds a
    /// failure. Returns the endpoint's standing after the count.
    fn count_endpoint_outcome(&mut self, tenant: TenantId, endpoint: WebhookId, answered: bool) -> StoreResult<EndpointHealth>;
    /// Fails up to `limit` deliveries still pending that were created
    /// before `created_before` (and are not out with a worker at `now`);
    /// returns how many.
    fn expire_deliveries(&mut self, created_before: Timestamp, now: Timestamp, limit: u32) -> StoreResult<usize>;
    /// Removes up to `limit` rows of `what` older than `cutoff`; returns
    /// how many went.
    fn prune(&mut self, what: Prunable, cutoff: Timestamp, limit: u32) -> StoreResult<usize>;
    /// Makes no attempt to the endpoint before `pause.until` (circuit open).
    fn pause_endpoint(&mut self, tenant: TenantId, endpoint: WebhookId, pause: Pause) -> StoreResult<()>;
}

/// A read unit: receives a read handle, or the reason none could be had.
pub type ReadJob = Box<dyn FnOnce(StoreResult<&mut dyn ReadTx>) + Send>;

/// A write unit. It runs inside the backend's transaction and tells whether
/// its changes are to be kept; `on_commit` is then called with the outcome
/// of the commit that includes (or discards) them.
pub type WriteJob = Box<dyn FnOnce(&mut dyn WriteTx) -> WriteOutcome + Send>;

pub struct WriteOutcome {
    pub keep: bool,
    pub on_commit: Box<dyn FnOnce(StoreResult<()>) + Send>,
}

/// A message the demo kept instead of sending.
#[derive(Clone, Debug)]
pub struct OutboxMessage {
    /// `email` or `sms`.
    pub channel: &'static str,
    pub recipient: String,
    pub subject: Option<String>,
    pub body: String,
    pub created_at: Timestamp,
}

/// What a storage backend implements.
pub trait Backend: Send + Sync + 'static {
    /// Short name for logs and the health report ("sqlite", "postgres").
    fn kind(&self) -> &'static str;
    fn submit_read(&self, job: ReadJob);
    fn submit_write(&self, job: WriteJob);
    /// Stops taking work, finishes what was submitted, and returns when
    /// everything accepted is committed.
    fn close(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>;
    /// Notified after every commit that added webhook deliveries, so the
    /// delivery worker wakes at once instead of polling.
    fn deliveries_signal(&self) -> Arc<tokio::sync::Notify>;
    /// A number that changes after every commit that changed what an
    /// installation token resolves to (an installation enabled or disabled,
    /// …), so cached resolutions know when they are stale.
    fn installations_generation(&self) -> u64;
}

/// The handle the rest of the program holds: cheap to clone, typed results.
#[derive(Clone)]
pub struct Database {
    backend: Arc<dyn Backend>,
}

impl Database {
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        Self { backend }
    }

    pub fn kind(&self) -> &'static str {
        self.backend.kind()
    }

    /// Runs a read unit and returns its result. The SQLite backend runs
    /// it on the calling thread: keep units short.
    pub async fn read<T, F>(&self, f: F) -> Result<T, DomainError>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn ReadTx) -> Result<T, DomainError> + Send + 'static,
    {
        let (job, answer) = read_job(f);
        self.backend.submit_read(job);
        answer.await.unwrap_or_else(|_| Err(closed()))
    }

    /// Runs a read unit whose cost grows with the data (the health report's
    /// counts, listings with totals) on a blocking thread: on a large
    /// database it may take a while, and it must not hold a runtime thread
    /// that answers requests meanwhile.
    pub async fn read_long<T, F>(&self, f: F) -> Result<T, DomainError>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn ReadTx) -> Result<T, DomainError> + Send + 'static,
    {
        let (job, answer) = read_job(f);
        let backend = Arc::clone(&self.backend);
        tokio::task::spawn_blocking(move || backend.submit_read(job)).await.map_err(|_| closed())?;
        answer.await.unwrap_or_else(|_| Err(closed()))
    }

    /// Runs a write unit and returns its result once it is durably
    /// committed. An `Err` from the unit discards its changes (and only its).
    pub async fn write<T, F>(&self, f: F) -> Result<T, DomainError>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn WriteTx) -> Result<T, DomainError> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        self.backend.submit_write(Box::new(move |handle| {
            let result = run_guarded(|| f(handle));
            WriteOutcome {
                keep: result.is_ok(),
                on_commit: Box::new(move |commit| {
                    let _ = tx.send(commit.map_err(DomainError::from).and(result));
                }),
            }
        }));
        rx.await.unwrap_or_else(|_| Err(closed()))
    }

    pub async fn close(&self) {
        self.backend.close().await;
    }

    pub fn deliveries_signal(&self) -> Arc<tokio::sync::Notify> {
        self.backend.deliveries_signal()
    }

    pub fn installations_generation(&self) -> u64 {
        self.backend.installations_generation()
    }
}

fn closed() -> DomainError {
    StoreError::Unavailable("the database is closed".into()).into()
}

/// A read unit for the backend, and where its result arrives.
fn read_job<T, F>(f: F) -> (ReadJob, oneshot::Receiver<Result<T, DomainError>>)
where
    T: Send + 'static,
    F: FnOnce(&mut dyn ReadTx) -> Result<T, DomainError> + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let job: ReadJob = Box::new(move |handle| {
        let result = match handle {
            Ok(handle) => run_guarded(|| f(handle)),
            Err(e) => Err(e.into()),
        };
        let _ = tx.send(result);
    });
    (job, rx)
}

/// A panic inside a unit of work must not take a shared database thread
/// down with it; it becomes an internal error of that unit alone.
fn run_guarded<T>(f: impl FnOnce() -> Result<T, DomainError>) -> Result<T, DomainError> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(StoreError::Internal("a unit of work panicked".into()).into()))
}
