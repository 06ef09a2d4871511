//! Turning SQLite errors into the storage layer's error.

use parley_domain::StoreError;
use rusqlite::ErrorCode;

pub(super) fn map(e: rusqlite::Error) -> StoreError {
    match &e {
        rusqlite::Error::SqliteFailure(f, msg) => match f.code {
            ErrorCode::ConstraintViolation if f.extended_code == 2067 || f.extended_code == 1555 => {
                StoreError::Duplicate(msg.clone().unwrap_or_default())
            }
            ErrorCode::DatabaseBusy
            | ErrorCode::DatabaseLocked
            | ErrorCode::CannotOpen
            | ErrorCode::SystemIoFailure
            | ErrorCode::DiskFull
            | ErrorCode::ReadOnly
            | ErrorCode::NotADatabase
            | ErrorCode::DatabaseCorrupt
            | ErrorCode::PermissionDenied => StoreError::Unavailable(e.to_string()),
            _ => StoreError::Internal(e.to_string()),
        },
        _ => StoreError::Internal(e.to_string()),
    }
}
