//! Turning PostgreSQL errors into the storage layer's error.

use parley_domain::StoreError;
use postgres::error::SqlState;

/// The server's own words when it sent some ("db error" alone tells the
/// logs nothing).
fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

/// Whether the connection is gone: closed, or ended by the server (a
/// restart, an administrator) with its last message.
pub(super) fn connection_lost(e: &postgres::Error) -> bool {
    match e.code() {
        // Without a SQLSTATE: lost only if the connection closed or its
        // I/O failed, not when a value could not be encoded (a bug that a
        // new connection would only repeat).
        None => e.is_closed() || io_failed(e),
        Some(code) => [SqlState::ADMIN_SHUTDOWN, SqlState::CRASH_SHUTDOWN].contains(code) || code.code().starts_with("08"),
    }
}

fn io_failed(e: &postgres::Error) -> bool {
    std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
}

pub(super) fn map(e: postgres::Error) -> StoreError {
    let Some(code) = e.code() else {
        // No SQLSTATE: the connection failed or closed, or the client
        // could not encode or decode a value (a bug, not an outage).
        return if e.is_closed() || io_failed(&e) { StoreError::Unavailable(e.to_string()) } else { StoreError::Internal(e.to_string()) };
    };
    if *code == SqlState::UNIQUE_VIOLATION {
        let detail = e.as_db_error().and_then(|d| d.constraint()).unwrap_or_default().to_owned();
        return StoreError::Duplicate(if detail.is_empty() { describe(&e) } else { detail });
    }
    // A deadlock or a serialization failure aborts the unit; nothing of it
    // was written, and the caller is told to try again.
    let transient = [
        SqlState::T_R_DEADLOCK_DETECTED,
        SqlState::T_R_SERIALIZATION_FAILURE,
        SqlState::ADMIN_SHUTDOWN,
        SqlState::CRASH_SHUTDOWN,
        SqlState::CANNOT_CONNECT_NOW,
        SqlState::TOO_MANY_CONNECTIONS,
        SqlState::DISK_FULL,
        SqlState::READ_ONLY_SQL_TRANSACTION,
    ];
    if transient.contains(code) || code.code().starts_with("08") {
        return StoreError::Unavailable(describe(&e));
    }
    StoreError::Internal(describe(&e))
}
