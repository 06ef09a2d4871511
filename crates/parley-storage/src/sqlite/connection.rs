//! Opening connections with the settings every part of the backend relies on.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::OpenError;

fn fail(path: &Path, e: impl ToString) -> OpenError {
    OpenError::Io { path: path.to_owned(), reason: e.to_string() }
}

/// The one read-write connection.
pub(super) fn open_writer(path: &Path) -> Result<Connection, OpenError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| fail(path, e))?;
    }
    let conn = Connection::open(path).map_err(|e| fail(path, e))?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(|e| fail(path, e))?;
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
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// A reader: sees committed data only and cannot write.
pub(super) fn open_reader(path: &Path) -> Result<Connection, OpenError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| fail(path, e))?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(|e| fail(path, e))?;
    conn.execute_batch("PRAGMA query_only = ON;").map_err(|e| fail(path, e))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}
