//! Turning PostgreSQL errors into the storage layer's error.

use parley_domain::StoreError;
use postgres::error::SqlState;

/// The server's own words when it sent some, else the error with its
/// causes: the client's own text ("db error", "error connecting to
/// server") leaves out what an operator needs to act on.
pub(crate) fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        // Never the detail: for a constraint it is "Failing row contains
        // (…)", the whole row, secrets and password hashes included.
        let mut text = format!("{} ({})", db.message(), db.code().code());
        for (name, value) in [("table", db.table()), ("column", db.column()), ("constraint", db.constraint())] {
            if let Some(value) = value {
                text.push_str(&format!(", {name} {value}"));
            }
        }
        return text;
    }
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let part = c.to_string();
        if !text.contains(&part) {
            text.push_str(&format!(": {part}"));
        }
        cause = c.source();
    }
    text
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
        return if e.is_closed() || io_failed(&e) { StoreError::Unavailable(describe(&e)) } else { StoreError::Internal(describe(&e)) };
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
