//! Embedded migrations for PostgreSQL, applied under an advisory lock so
//! several instances may start at once: the first applies them, the others
//! wait and then find nothing to do.

use postgres::Client;

use crate::OpenError;

const MIGRATIONS: &[(u32, &str)] = &[
    (1, include_str!("../../migrations/postgres/0001_initial.sql")),
    (2, include_str!("../../migrations/postgres/0002_login_failures.sql")),
    (3, include_str!("../../migrations/postgres/0003_feed.sql")),
    (4, include_str!("../../migrations/postgres/0004_client_message_id.sql")),
    (5, include_str!("../../migrations/postgres/0005_personal_tokens.sql")),
    (6, include_str!("../../migrations/postgres/0006_verification_tests.sql")),
    (7, include_str!("../../migrations/postgres/0007_server_keys.sql")),
    (8, include_str!("../../migrations/postgres/0008_operator_only_routing.sql")),
    (9, include_str!("../../migrations/postgres/0009_one_schema.sql")),
    (10, include_str!("../../migrations/postgres/0010_operator_notifications.sql")),
    (11, include_str!("../../migrations/postgres/0011_push_outbox.sql")),
    (12, include_str!("../../migrations/postgres/0012_visitor_continuity.sql")),
    (13, include_str!("../../migrations/postgres/0013_widget_identity.sql")),
    (14, include_str!("../../migrations/postgres/0014_widget_languages_hours.sql")),
    (15, include_str!("../../migrations/postgres/0015_attachments.sql")),
    (16, include_str!("../../migrations/postgres/0016_erasure.sql")),
    (17, include_str!("../../migrations/postgres/0017_canned_responses.sql")),
    (18, include_str!("../../migrations/postgres/0018_search.sql")),
    (19, include_str!("../../migrations/postgres/0019_conversation_summary.sql")),
    (20, include_str!("../../migrations/postgres/0020_audit_log.sql")),
    (21, include_str!("../../migrations/postgres/0021_password_links.sql")),
    (22, include_str!("../../migrations/postgres/0022_notification_choices.sql")),
    (23, include_str!("../../migrations/postgres/0023_search_at_scale.sql")),
    (24, include_str!("../../migrations/postgres/0024_claims_by_endpoint.sql")),
];

/// Changes with the migrations' text: names the test template database.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn fingerprint() -> u64 {
    crate::locks::fnv1a(MIGRATIONS.iter().flat_map(|(_, sql)| sql.bytes()))
}

/// The version a database is at once every migration of this build ran.
pub(crate) fn latest() -> u32 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}

pub(crate) fn apply(client: &mut Client) -> Result<Vec<u32>, OpenError> {
    super::require_utf8(client)?;
    client.execute("SELECT pg_advisory_lock($1)", &[&crate::locks::MIGRATIONS]).map_err(|e| fail(0, e))?;
    let result = apply_locked(client);
    // The lock is the session's: release it whatever happened.
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&crate::locks::MIGRATIONS]);
    let applied = result?;
    unlocked.map_err(|e| fail(0, e))?;
    Ok(applied)
}

fn fail(version: u32, e: postgres::Error) -> OpenError {
    OpenError::Migration { version, reason: super::error::describe(&e) }
}

fn apply_locked(client: &mut Client) -> Result<Vec<u32>, OpenError> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS parley_migrations (version BIGINT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
        )
        .map_err(|e| fail(0, e))?;
    let current: i64 = client
        .query_one("SELECT COALESCE(MAX(version), 0) AS v FROM parley_migrations", &[])
        .and_then(|row| row.try_get("v"))
        .map_err(|e| fail(0, e))?;
    let latest = latest();
    if current > i64::from(latest) {
        return Err(OpenError::Migration {
            version: u32::try_from(current).unwrap_or(u32::MAX),
            reason: format!("the database is at version {current}, newer than this build knows ({latest})"),
        });
    }
    let mut applied = Vec::new();
    for &(version, sql) in MIGRATIONS.iter().filter(|m| i64::from(m.0) > current) {
        let mut tx = client.transaction().map_err(|e| fail(version, e))?;
        tx.batch_execute(sql).map_err(|e| fail(version, e))?;
        tx.execute("INSERT INTO parley_migrations (version) VALUES ($1)", &[&i64::from(version)]).map_err(|e| fail(version, e))?;
        tx.commit().map_err(|e| fail(version, e))?;
        applied.push(version);
    }
    Ok(applied)
}
