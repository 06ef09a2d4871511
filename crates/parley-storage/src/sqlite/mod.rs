//! The SQLite backend.
//!
//! One writer thread owns the only read-write connection and commits write
//! units in batches: every unit that arrives while a commit is in progress
//! joins the next transaction, each inside its own savepoint, so one fsync
//! makes many writes durable (group commit) and a failing unit rolls back
//! alone. Read units run on the calling thread, on a few read-only
//! connections, from WAL snapshots that never block the writer.
//!
//! Durability: WAL with `synchronous=FULL`, so a unit is on disk before its
//! caller hears about it, and survives a process kill or a power loss.

mod conn;
pub(crate) mod connection;
mod error;
mod files;
pub(crate) mod migrate;
mod readers;
mod writer;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use parley_domain::store::{Backend, Database, Lead, ReadJob, StoreResult, WriteJob};

use crate::OpenError;
use crate::backend::{Queue, Signals, Threads, closed};

#[derive(Clone, Debug)]
pub struct SqliteOptions {
    /// Read-only connections: more than the runtime has threads, since a
    /// read runs on the runtime thread that asks for it and one waiting
    /// for a connection holds its thread.
    pub readers: usize,
    /// Most write units committed together.
    pub max_batch: usize,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        Self { readers: (threads + 2).max(4), max_batch: 512 }
    }
}

struct SqliteBackend {
    signals: Arc<Signals>,
    writes: Queue<WriteJob>,
    readers: readers::Readers,
    threads: Threads,
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
    let signals = Arc::new(Signals::default());
    let (writes, write_rx) = Queue::new();
    let writer = writer::spawn(conn, write_rx, options.max_batch.max(1), Arc::clone(&signals)).map_err(|e| io(&path, e))?;
    let read_conns = (0..options.readers.max(1)).map(|_| connection::open_reader(&path)).collect::<Result<Vec<_>, _>>()?;
    let backend = SqliteBackend { signals, writes, readers: readers::Readers::new(read_conns), threads: Threads::new(vec![writer]) };
    Ok(Database::new(Arc::new(backend)))
}

pub(crate) fn inspect(path: &std::path::Path) -> Result<crate::Schema, OpenError> {
    let latest = migrate::latest();
    let version = rusqlite::version();
    let exists = match path.try_exists() {
        Ok(exists) => exists,
        // A file where a folder should be: `can_be_made` says which.
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => false,
        Err(e) => return Err(OpenError::Io { path: path.to_owned(), reason: format!("cannot be looked at: {e}") }),
    };
    if !exists {
        crate::can_be_made(path).map_err(|reason| OpenError::Io { path: path.to_owned(), reason })?;
        return Ok(crate::Schema { made: false, version: 0, latest, server: format!("SQLite {version}") });
    }
    // Through a link, SQLite makes its -wal and -shm beside the file the
    // link names: that is the folder to write in.
    let path = &path.canonicalize().map_err(|e| OpenError::Io { path: path.to_owned(), reason: e.to_string() })?;
    // `serve` writes the file and, beside it, its -wal and -shm files.
    let unwritable = |reason: String| OpenError::Io { path: path.to_owned(), reason };
    let file = std::fs::OpenOptions::new().read(true).write(true).open(path).map_err(|e| unwritable(format!("cannot be written: {e}")))?;
    crate::can_be_made(path).map_err(unwritable)?;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let applied = if std::path::Path::new(&wal).exists() {
        // In use (or left by a crash): the newest version may be in the
        // WAL, which SQLite reads; its -shm is there already.
        let conn = connection::open_reader(path)?;
        conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| unwritable(e.to_string()))?
    } else {
        // Closed cleanly: everything is in the file. Reading its header
        // leaves nothing behind, where a connection would leave -wal and
        // -shm files owned by whoever ran the check.
        header_version(file).map_err(unwritable)?
    };
    Ok(crate::Schema { made: true, version: applied, latest, server: format!("SQLite {version}") })
}

/// The `user_version` a database file's header holds (4 bytes, big-endian,
/// at offset 60), once the header is seen to be SQLite's.
fn header_version(mut file: std::fs::File) -> Result<u32, String> {
    use std::io::Read;
    let mut header = [0u8; 64];
    // An empty file (made by `touch`) is a database SQLite starts.
    if file.metadata().map_err(|e| format!("cannot be read: {e}"))?.len() == 0 {
        return Ok(0);
    }
    file.read_exact(&mut header).map_err(|e| format!("cannot be read: {e}"))?;
    if &header[..16] != b"SQLite format 3\0" {
        return Err("is not a SQLite database".into());
    }
    Ok(u32::from_be_bytes([header[60], header[61], header[62], header[63]]))
}

pub(crate) fn prepare_all(path: &std::path::Path) -> Result<usize, String> {
    let mut conn = connection::open_writer(path).map_err(|e| e.to_string())?;
    migrate::apply(&mut conn).map_err(|e| e.to_string())?;
    crate::sql::prepare_every(&mut conn::SqliteConn::new(&conn))
}

fn io(path: &std::path::Path, e: std::io::Error) -> OpenError {
    OpenError::Io { path: path.to_owned(), reason: e.to_string() }
}

impl Backend for SqliteBackend {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn submit_read(&self, job: ReadJob) {
        if self.threads.is_closed() {
            job(Err(closed()));
        } else {
            self.readers.run(job);
        }
    }

    fn submit_write(&self, job: WriteJob) {
        // A job that cannot be queued (closed, or the queue is full) is
        // dropped, which drops its reply channel: the caller sees
        // "database unavailable" and nothing was written.
        let _ = self.writes.send(job);
    }

    fn deliveries_signal(&self) -> Arc<tokio::sync::Notify> {
        self.signals.deliveries()
    }

    fn feed_signal(&self) -> Arc<tokio::sync::Notify> {
        self.signals.feed()
    }

    fn pushes_signal(&self) -> Arc<tokio::sync::Notify> {
        self.signals.pushes()
    }

    fn installations_generation(&self) -> u64 {
        self.signals.installations_generation()
    }

    fn conversation_changes(&self) -> Arc<parley_domain::feed::Changes> {
        self.signals.changes()
    }

    fn messages_created(&self) -> parley_domain::store::MessageCounts {
        self.signals.messages_created()
    }

    /// One process owns an SQLite database (several instances need
    /// PostgreSQL), so it always leads.
    fn lead(&self, _task: &'static str) -> Pin<Box<dyn Future<Output = StoreResult<Option<Lead>>> + Send + '_>> {
        Box::pin(async { Ok(Some(Lead::sole())) })
    }

    /// One instance owns a SQLite file: there is nobody to tell.
    fn broadcast(&self, _text: String) {}

    fn heard(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.signals.heard()
    }

    fn close(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            self.writes.close();
            self.threads.close().await;
        })
    }
}

#[cfg(test)]
mod plans {
    use crate::sql::{Dialect, webhooks_plan_queries as q};

    fn plan(conn: &rusqlite::Connection, sql: &str, args: &[i64]) -> Vec<String> {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).expect("prepare");
        stmt.query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(3)).expect("plan").collect::<Result<_, _>>().expect("rows")
    }

    /// The plans SQLite picks for the worker's queries, which run on every
    /// commit that adds deliveries: none may walk the whole backlog.
    #[test]
    fn delivery_queries_walk_the_endpoints_not_the_backlog() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let mut conn = super::connection::open_writer(&dir.path().join("plan.sqlite3")).expect("open");
        super::migrate::apply(&mut conn).expect("migrate");
        let p = plan(&conn, q::DUE_DELIVERIES.text(Dialect::Sqlite).expect("text"), &[0, 16]);
        assert!(p.first().is_some_and(|p| p.starts_with("SCAN w")), "endpoints first: {p:?}");
        assert!(!p.iter().any(|p| p.starts_with("SCAN d")), "no scan of the deliveries: {p:?}");
        assert!(p.iter().any(|p| p.contains("webhook_deliveries_endpoint_due")), "the per-endpoint index: {p:?}");

        let p = plan(&conn, q::NEXT_DELIVERY_DUE.text(Dialect::Sqlite).expect("text"), &[]);
        assert!(!p.iter().any(|p| p.starts_with("SCAN d")), "no scan of the deliveries: {p:?}");
        assert!(p.iter().any(|p| p.contains("COVERING INDEX webhook_deliveries_endpoint_due")), "the per-endpoint index: {p:?}");

        // The health report's lag, which anyone may ask for.
        let p = plan(&conn, q::OLDEST_DUE_DELIVERY.text(Dialect::Sqlite).expect("text"), &[0]);
        assert!(!p.iter().any(|p| p.starts_with("SCAN d")), "no scan of the deliveries: {p:?}");
        assert!(p.iter().any(|p| p.contains("webhook_deliveries_endpoint_due")), "the per-endpoint index: {p:?}");

        // Login finds the operator through an index, whatever the case.
        let p = plan(&conn, "SELECT id FROM operators o WHERE lower(o.email) = lower('A@b.c')", &[]);
        assert!(p.iter().any(|p| p.contains("operators_email_lower")), "the email index: {p:?}");
    }
}
