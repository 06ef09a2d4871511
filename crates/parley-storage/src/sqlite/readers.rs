//! Read connections, used on the calling thread.
//!
//! A read unit is a few index lookups: handing it to another thread and
//! back cost more than the unit itself (two context switches, a queue
//! shared under a lock). So a read runs where it is asked for, on one of a
//! few read-only connections, inside a short read transaction that gives
//! it one consistent snapshot. There are more connections than runtime
//! threads, so a free one is almost always at hand; when none is, the
//! read waits for one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use parley_domain::store::ReadJob;
use rusqlite::Connection;

use super::error::map;
use super::queries::Handle;

pub(super) struct Readers {
    conns: Vec<Mutex<Connection>>,
    /// Where the next read starts looking, so reads spread over the pool.
    next: AtomicUsize,
}

impl Readers {
    pub(super) fn new(conns: Vec<Connection>) -> Self {
        Self { conns: conns.into_iter().map(Mutex::new).collect(), next: AtomicUsize::new(0) }
    }

    pub(super) fn run(&self, job: ReadJob) {
        let n = self.conns.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        for k in 0..n {
            if let Ok(conn) = self.conns[(start + k) % n].try_lock() {
                return run_on(conn, job);
            }
        }
        let conn = self.conns[start].lock().unwrap_or_else(|p| p.into_inner());
        run_on(conn, job)
    }
}

fn run_on(conn: MutexGuard<'_, Connection>, job: ReadJob) {
    if let Err(e) = statement(&conn, "BEGIN") {
        job(Err(map(e)));
        return;
    }
    job(Ok(&mut Handle::new(&conn)));
    if statement(&conn, "COMMIT").is_err() {
        let _ = statement(&conn, "ROLLBACK");
    }
}

/// Runs a statement without rows from the connection's cache, so it is
/// parsed once, not on every unit.
pub(super) fn statement(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}
