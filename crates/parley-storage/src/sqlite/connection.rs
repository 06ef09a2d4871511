//! Opening connections with the settings every part of the backend relies on.

use std::path::Path;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use crate::OpenError;

fn fail(path: &Path, e: impl ToString) -> OpenError {
    OpenError::Io { path: path.to_owned(), reason: e.to_string() }
}

/// Settings every connection gets.
fn tune(conn: &Connection, path: &Path) -> Result<(), OpenError> {
    conn.busy_timeout(Duration::from_secs(5)).map_err(|e| fail(path, e))?;
    // Without the query planner stability guarantee SQLite re-prepares a
    // statement whenever a parameter the planner looked at (a bound LIMIT,
    // say) is bound again: every poll would parse its SQL anew.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).map_err(|e| fail(path, e))?;
    // Room for every statement of the storage layer.
    conn.set_prepared_statement_cache_capacity(256);
    Ok(())
}

/// The one read-write connection.
pub(crate) fn open_writer(path: &Path) -> Result<Connection, OpenError> {
    super::files::prepare(path).map_err(|e| fail(path, e))?;
    let conn = Connection::open(path).map_err(|e| fail(path, e))?;
    tune(&conn, path)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         PRAGMA synchronous = FULL;
         PRAGMA foreign_keys = ON;
         PRAGMA journal_size_limit = 67108864;
         PRAGMA temp_store = MEMORY;",
    )
    .map_err(|e| fail(path, e))?;
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).map_err(|e| fail(path, e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(fail(path, format!("could not switch to WAL mode (got {mode})")));
    }
    // WAL mode has created the -wal and -shm files by now.
    super::files::restrict(path).map_err(|e| fail(path, e))?;
    Ok(conn)
}

/// A reader: sees committed data only and cannot write.
pub(crate) fn open_reader(path: &Path) -> Result<Connection, OpenError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| fail(path, e))?;
    tune(&conn, path)?;
    conn.execute_batch("PRAGMA query_only = ON;").map_err(|e| fail(path, e))?;
    Ok(conn)
}
