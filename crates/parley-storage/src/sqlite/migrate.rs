//! Embedded migrations, tracked with SQLite's `user_version`.
//!
//! Each migration runs in its own transaction together with the version
//! bump, so a crash mid-way leaves the previous version intact.

use rusqlite::Connection;

use crate::OpenError;

const MIGRATIONS: &[(u32, &str)] = &[
    (1, include_str!("../../migrations/sqlite/0001_initial.sql")),
    (2, include_str!("../../migrations/sqlite/0002_webhooks.sql")),
    (3, include_str!("../../migrations/sqlite/0003_verification.sql")),
    (4, include_str!("../../migrations/sqlite/0004_automation.sql")),
    (5, include_str!("../../migrations/sqlite/0005_hardening.sql")),
    (6, include_str!("../../migrations/sqlite/0006_portable.sql")),
    (7, include_str!("../../migrations/sqlite/0007_indexes.sql")),
    (8, include_str!("../../migrations/sqlite/0008_login_failures.sql")),
    (9, include_str!("../../migrations/sqlite/0009_feed.sql")),
    (10, include_str!("../../migrations/sqlite/0010_client_message_id.sql")),
    (11, include_str!("../../migrations/sqlite/0011_personal_tokens.sql")),
    (12, include_str!("../../migrations/sqlite/0012_verification_tests.sql")),
    (13, include_str!("../../migrations/sqlite/0013_server_keys.sql")),
    (14, include_str!("../../migrations/sqlite/0014_operator_only_routing.sql")),
];

/// The version a database is at once every migration of this build ran.
pub(crate) fn latest() -> u32 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}

pub(crate) fn apply(conn: &mut Connection) -> Result<Vec<u32>, OpenError> {
    // SQLite's message without the migration's whole text, which
    // rusqlite appends to a syntax or schema error.
    let fail = |version: u32, e: rusqlite::Error| {
        let reason = match &e {
            rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
            other => other.to_string(),
        };
        OpenError::Migration { version, reason }
    };
    let current: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| fail(0, e))?;
    let latest = latest();
    if current > latest {
        return Err(OpenError::Migration {
            version: current,
            reason: format!("the database is at version {current}, newer than this build knows ({latest})"),
        });
    }
    let mut applied = Vec::new();
    for &(version, sql) in MIGRATIONS.iter().filter(|m| m.0 > current) {
        let tx = conn.transaction().map_err(|e| fail(version, e))?;
        tx.execute_batch(sql).map_err(|e| fail(version, e))?;
        tx.pragma_update(None, "user_version", version).map_err(|e| fail(version, e))?;
        tx.commit().map_err(|e| fail(version, e))?;
        applied.push(version);
    }
    Ok(applied)
}
