//! The SQLite backend.
//!
//! One writer thread owns the only read-write connection and commits write
//! units in batches: every unit that arrives while a commit is in progress
//! joins the next transaction, each inside its own savepoint, so one fsync
//! makes many writes durable (group commit) and a failing unit rolls back
//! alone. A few reader threads, each with its own connection, serve read
//! units from WAL snapshots without ever blocking the writer.
//!
//! Durability: WAL with `synchronous=FULL`, so a unit is on disk before its
//! caller hears about it, and survives a process kill or a power loss.

mod connection;
mod error;
mod migrate;
mod queries;
mod readers;
mod writer;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use parley_domain::store::{Backend, Database, ReadJob, StoreError, WriteJob};

use crate::OpenError;

#[derive(Clone, Debug)]
pub struct SqliteOptions {
    /// Reader threads (and connections).
    pub readers: usize,
    /// Most write units committed together.
    pub max_batch: usize,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self { readers: 4, max_batch: 512 }
    }
}

/// Units of work waiting for a thread, per kind. Past this the backend
/// answers "unavailable" at once instead of queueing without limit.
const QUEUE_BOUND: usize = 16_384;

struct SqliteBackend {
    deliveries: Arc<tokio::sync::Notify>,
    writes: Mutex<Option<SyncSender<WriteJob>>>,
    reads: Mutex<Option<SyncSender<ReadJob>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

pub(crate) async fn open(path: PathBuf, options: SqliteOptions) -> Result<Database, OpenError> {
    tokio::task::spawn_blocking(move || open_blocking(path, options))
        .await
        .map_err(|e| OpenError::Io { path: PathBuf::new(), reason: e.to_string() })?
}

pub(crate) async fn migrate_only(path: PathBuf) -> Result<Vec<u32>, OpenError> {
    tokio::task::spawn_blocking(move || {
        let mut conn = connection::open_writer(&path)?;
        migrate::apply(&mut conn)
    })
    .await
    .map_err(|e| OpenError::Io { path: PathBuf::new(), reason: e.to_string() })?
}

fn open_blocking(path: PathBuf, options: SqliteOptions) -> Result<Database, OpenError> {
    let mut conn = connection::open_writer(&path)?;
    let applied = migrate::apply(&mut conn)?;
    if !applied.is_empty() {
        tracing::info!(?applied, path = %path.display(), "applied database migrations");
    }
    let mut threads = Vec::new();
    let deliveries = Arc::new(tokio::sync::Notify::new());
    let (write_tx, write_rx) = std::sync::mpsc::sync_channel(QUEUE_BOUND);
    threads.push(writer::spawn(conn, write_rx, options.max_batch.max(1), Arc::clone(&deliveries)).map_err(|e| io(&path, e))?);
    let (read_tx, read_rx) = std::sync::mpsc::sync_channel(QUEUE_BOUND);
    let read_rx = Arc::new(Mutex::new(read_rx));
    for n in 0..options.readers.max(1) {
        let conn = connection::open_reader(&path)?;
        threads.push(readers::spawn(n, conn, Arc::clone(&read_rx)).map_err(|e| io(&path, e))?);
    }
    let backend =
        SqliteBackend { deliveries, writes: Mutex::new(Some(write_tx)), reads: Mutex::new(Some(read_tx)), threads: Mutex::new(threads) };
    Ok(Database::new(Arc::new(backend)))
}

fn io(path: &std::path::Path, e: std::io::Error) -> OpenError {
    OpenError::Io { path: path.to_owned(), reason: e.to_string() }
}

impl Backend for SqliteBackend {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn submit_read(&self, job: ReadJob) {
        let sender = self.reads.lock().ok().and_then(|s| s.clone());
        match sender {
            Some(sender) => match sender.try_send(job) {
                Ok(()) => {}
                Err(TrySendError::Full(job)) => job(Err(StoreError::Unavailable("too many reads queued".into()))),
                Err(TrySendError::Disconnected(job)) => job(Err(closed())),
            },
            None => job(Err(closed())),
        }
    }

    fn submit_write(&self, job: WriteJob) {
        let sender = self.writes.lock().ok().and_then(|s| s.clone());
        // A job that cannot be queued (closed, or the queue is full) is
        // dropped, which drops its reply channel: the caller sees
        // "database unavailable" and nothing was written.
        if let Some(sender) = sender
            && let Err(TrySendError::Full(_)) = sender.try_send(job)
        {
            tracing::warn!("write queue full: refusing a write");
        }
    }

    fn deliveries_signal(&self) -> Arc<tokio::sync::Notify> {
        Arc::clone(&self.deliveries)
    }

    fn close(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            if let Ok(mut w) = self.writes.lock() {
                w.take();
            }
            if let Ok(mut r) = self.reads.lock() {
                r.take();
            }
            let threads = self.threads.lock().map(|mut t| std::mem::take(&mut *t)).unwrap_or_default();
            let _ = tokio::task::spawn_blocking(move || {
                for t in threads {
                    let _ = t.join();
                }
            })
            .await;
        })
    }
}

fn closed() -> StoreError {
    StoreError::Unavailable("the database is closed".into())
}
