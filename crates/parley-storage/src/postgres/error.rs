//! Turning PostgreSQL errors into the storage layer's error.

use parley_domain::StoreError;
use postgres::error::SqlState;

pub(super) fn map(e: postgres::Error) -> StoreError {
    let Some(code) = e.code() else {
        // No SQLSTATE: the connection failed or closed.
        return StoreError::Unavailable(e.to_string());
    };
    if *code == SqlState::UNIQUE_VIOLATION {
        let detail = e.as_db_error().and_then(|d| d.constraint()).unwrap_or_default().to_owned();
        return StoreError::Duplicate(detail);
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
        return StoreError::Unavailable(e.to_string());
    }
    StoreError::Internal(e.to_string())
}
