//! Read connections, used on the calling thread.
//!
//! A read unit is a few index lookups: handing it to another thread and
//! back cost more than the unit itself (two context switches, a queue
//! shared under a lock). So a read runs where it is asked for, on one of a
//! few read-only connections, inside a short read transaction that gives
//! it one consistent snapshot. There are more connections than runtime
//! threads, so a free one is almost always at hand; when none is, the
//! read waits for whichever comes back first. Reads whose cost grows with
//! the data go through `Database::read_long`, on a blocking thread, so
//! they never hold a runtime thread.

use std::sync::{Condvar, Mutex};

use parley_domain::store::ReadJob;
use rusqlite::Connection;

use super::conn::SqliteConn;
use super::error::map;
use crate::sql::Tx;

pub(super) struct Readers {
    /// The connections not in use.
    free: Mutex<Vec<Connection>>,
    /// Signalled when a connection comes back.
    returned: Condvar,
}

impl Readers {
    pub(super) fn new(conns: Vec<Connection>) -> Self {
        Self { free: Mutex::new(conns), returned: Condvar::new() }
    }

    /// Runs `job` on a free connection, waiting for whichever comes back
    /// first when none is. The lock is held only to take and return one.
    pub(super) fn run(&self, job: ReadJob) {
        let conn = {
            let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if let Some(conn) = free.pop() {
                    break conn;
                }
                free = self.returned.wait(free).unwrap_or_else(|p| p.into_inner());
            }
        };
        run_on(&conn, job);
        self.free.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
        self.returned.notify_one();
    }
}

fn run_on(conn: &Connection, job: ReadJob) {
    if let Err(e) = statement(conn, "BEGIN") {
        job(Err(map(e)));
        return;
    }
    job(Ok(&mut Tx::read(&mut SqliteConn::new(conn))));
    if statement(conn, "COMMIT").is_err() {
        let _ = statement(conn, "ROLLBACK");
    }
}

/// Runs a statement without rows from the connection's cache, so it is
/// parsed once, not on every unit.
pub(super) fn statement(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}
