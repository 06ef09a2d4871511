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

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::model::MessageId;

pub mod ops;

pub use ops::{ReadTx, WriteTx};

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
    /// Pushes sent (or dropped) whose spacing has run out: nothing reads
    /// them again. Pruned by their own cutoff (see `Prunable::cutoff`).
    Pushes,
    /// What is left of widget streams that ended: nothing reads a
    /// presence once it has run out. Pruned a day after (see `cutoff`).
    Presence,
}

impl Prunable {
    pub const ALL: [Prunable; 6] =
        [Prunable::Events, Prunable::Tokens, Prunable::Challenges, Prunable::SandboxOutbox, Prunable::Pushes, Prunable::Presence];

    /// What is older than this goes: the retention for records, the
    /// spacing for pushes, which are kept only to hold the next one back.
    pub fn cutoff(self, now: crate::Timestamp, retention: std::time::Duration) -> crate::Timestamp {
        match self {
            Prunable::Pushes => now.minus(crate::push::SPACING),
            Prunable::Presence => now.minus(std::time::Duration::from_secs(86_400)),
            _ => now.minus(retention),
        }
    }
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
    /// Notified after every commit that appended to the feed (here or, on
    /// PostgreSQL, in another instance), so the feed follower reads at
    /// once instead of polling.
    fn feed_signal(&self) -> Arc<tokio::sync::Notify>;
    /// Notified after every commit that queued operator pushes (here or,
    /// on PostgreSQL, in another instance), so the push worker wakes.
    fn pushes_signal(&self) -> Arc<tokio::sync::Notify>;
    /// A number that changes after every commit that changed what an
    /// installation token resolves to (an installation enabled or disabled,
    /// …), so cached resolutions know when they are stale.
    fn installations_generation(&self) -> u64;
    /// The conversations changed by this instance's commits, counted
    /// after each commit and before its caller hears of it (the feed
    /// follower counts the other instances').
    fn conversation_changes(&self) -> Arc<crate::feed::Changes>;
    /// Messages this instance has committed since it started, by sender:
    /// counted where every message is added, after its commit, so a unit
    /// rolled back or a repeat that added nothing counts for nothing.
    fn messages_created(&self) -> MessageCounts;
    /// Makes this instance the one that runs `task`, if no other instance
    /// sharing the database is running it: `None` when one is. The
    /// returned guard gives the task up when dropped.
    fn lead(&self, task: &'static str) -> Pin<Box<dyn Future<Output = StoreResult<Option<Lead>>> + Send + '_>>;
    /// Tells the other instances sharing the database `text`, a hint that
    /// is not stored (a typing indicator): at most once, maybe never.
    /// With one instance only (SQLite) there is nobody to tell.
    fn broadcast(&self, text: String);
    /// What other instances broadcast, from now on.
    fn heard(&self) -> tokio::sync::broadcast::Receiver<String>;
}

/// Messages committed, by sender; operator-only notes are not counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MessageCounts {
    pub visitor: u64,
    pub operator: u64,
    pub system: u64,
}

impl MessageCounts {
    /// One more message of `kind`.
    pub fn add(&mut self, kind: crate::model::SenderKind) {
        match kind {
            crate::model::SenderKind::Visitor => self.visitor += 1,
            crate::model::SenderKind::Operator => self.operator += 1,
            crate::model::SenderKind::System => self.system += 1,
        }
    }

    /// The counts of two units committed together.
    pub fn merge(&mut self, other: MessageCounts) {
        self.visitor += other.visitor;
        self.operator += other.operator;
        self.system += other.system;
    }
}

/// The right to run a task that runs in one instance at a time, given up
/// when dropped.
pub struct Lead(Option<Box<dyn FnOnce() + Send>>);

impl Lead {
    /// A lead nothing else could contest (one process owns the database).
    pub fn sole() -> Self {
        Self(None)
    }

    /// A lead that runs `release` when dropped.
    pub fn until_dropped(release: impl FnOnce() + Send + 'static) -> Self {
        Self(Some(Box::new(release)))
    }
}

impl Drop for Lead {
    fn drop(&mut self) {
        if let Some(release) = self.0.take() {
            release();
        }
    }
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

    pub fn feed_signal(&self) -> Arc<tokio::sync::Notify> {
        self.backend.feed_signal()
    }

    pub fn deliveries_signal(&self) -> Arc<tokio::sync::Notify> {
        self.backend.deliveries_signal()
    }

    pub fn pushes_signal(&self) -> Arc<tokio::sync::Notify> {
        self.backend.pushes_signal()
    }

    pub fn messages_created(&self) -> MessageCounts {
        self.backend.messages_created()
    }

    pub fn installations_generation(&self) -> u64 {
        self.backend.installations_generation()
    }

    /// See [`Backend::conversation_changes`].
    pub fn conversation_changes(&self) -> Arc<crate::feed::Changes> {
        self.backend.conversation_changes()
    }

    /// See [`Backend::broadcast`].
    pub fn broadcast(&self, text: String) {
        self.backend.broadcast(text);
    }

    /// See [`Backend::heard`].
    pub fn heard(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.backend.heard()
    }

    /// See [`Backend::lead`].
    pub async fn lead(&self, task: &'static str) -> Result<Option<Lead>, DomainError> {
        Ok(self.backend.lead(task).await?)
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
