//! Embedded migrations, tracked with SQLite's `user_version`.
//!
//! Each migration runs in its own transaction together with the version
//! bump, so a crash mid-way leaves the previous version intact.
//!
//! A migration that makes a table again (SQLite cannot drop a column's
//! constraint) starts with the line [`FOREIGN_KEYS_OFF`]: it then runs
//! with foreign keys off, as SQLite's own procedure for such changes
//! requires (with them on, dropping the old table would cascade to the
//! rows that refer to it), and every foreign key is checked before it
//! commits.

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
    (15, include_str!("../../migrations/sqlite/0015_one_schema.sql")),
    (16, include_str!("../../migrations/sqlite/0016_operator_notifications.sql")),
    (17, include_str!("../../migrations/sqlite/0017_push_outbox.sql")),
    (18, include_str!("../../migrations/sqlite/0018_visitor_continuity.sql")),
    (19, include_str!("../../migrations/sqlite/0019_widget_identity.sql")),
    (20, include_str!("../../migrations/sqlite/0020_widget_languages_hours.sql")),
    (21, include_str!("../../migrations/sqlite/0021_attachments.sql")),
    (22, include_str!("../../migrations/sqlite/0022_erasure.sql")),
    (23, include_str!("../../migrations/sqlite/0023_canned_responses.sql")),
    (24, include_str!("../../migrations/sqlite/0024_search.sql")),
    (25, include_str!("../../migrations/sqlite/0025_conversation_summary.sql")),
    (26, include_str!("../../migrations/sqlite/0026_audit_log.sql")),
    (27, include_str!("../../migrations/sqlite/0027_password_links.sql")),
    (28, include_str!("../../migrations/sqlite/0028_notification_choices.sql")),
    (29, include_str!("../../migrations/sqlite/0029_search_without_prefixes.sql")),
    (30, include_str!("../../migrations/sqlite/0030_search_at_scale.sql")),
    (31, include_str!("../../migrations/sqlite/0031_claims_by_endpoint.sql")),
];

/// The first line of a migration that must run with foreign keys off.
const FOREIGN_KEYS_OFF: &str = "-- parley: foreign keys off";

/// The version a database is at once every migration of this build ran.
pub(crate) fn latest() -> u32 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}

/// Runs one migration and its version bump in one transaction; with
/// `check_keys`, refuses to commit while any foreign key is broken.
fn run_one(conn: &mut Connection, version: u32, sql: &str, check_keys: bool) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch(sql)?;
    if check_keys {
        let broken: i64 = tx.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| r.get(0))?;
        if broken > 0 {
            return Err(rusqlite::Error::SqlInputError {
                error: rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT),
                msg: format!("{broken} rows would be left referring to rows that are gone"),
                sql: String::new(),
                offset: -1,
            });
        }
    }
    tx.pragma_update(None, "user_version", version)?;
    tx.commit()
}

pub(crate) fn apply(conn: &mut Connection) -> Result<Vec<u32>, OpenError> {
    apply_until(conn, latest())
}

/// Applies the migrations up to `last` (tests start a database from an
/// earlier release's schema with it).
pub(crate) fn apply_until(conn: &mut Connection, last: u32) -> Result<Vec<u32>, OpenError> {
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
    for &(version, sql) in MIGRATIONS.iter().filter(|m| m.0 > current && m.0 <= last) {
        let keys_off = sql.starts_with(FOREIGN_KEYS_OFF);
        if keys_off {
            // Only outside a transaction does this take effect.
            conn.pragma_update(None, "foreign_keys", false).map_err(|e| fail(version, e))?;
        }
        let ran = run_one(conn, version, sql, keys_off).map_err(|e| fail(version, e));
        if keys_off {
            conn.pragma_update(None, "foreign_keys", true).map_err(|e| fail(version, e))?;
        }
        ran?;
        applied.push(version);
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Making the operators table again keeps every operator and every
    /// row that refers to one, and leaves emails unique whatever their
    /// case.
    #[test]
    fn the_operators_made_again_keep_their_rows_and_what_refers_to_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::sqlite::connection::open_writer(&dir.path().join("old.sqlite3")).unwrap();
        apply_until(&mut conn, 14).unwrap();
        conn.execute_batch(
            "INSERT INTO tenants (id, slug, name, created_at) VALUES (1, 'acme', 'Acme', 1);
             INSERT INTO sites (id, tenant_id, name, domains, created_at) VALUES (1, 1, 'Site', '[]', 1);
             INSERT INTO operators (id, tenant_id, email, name, password_hash, role, created_at)
                 VALUES (1, 1, 'Ann@Example.com', 'Ann', 'h', 'admin', 1), (2, 1, 'bob@example.com', 'Bob', 'h', 'agent', 1);
             INSERT INTO operator_sites (tenant_id, operator_id, site_id) VALUES (1, 2, 1);
             INSERT INTO operator_tokens (tenant_id, operator_id, kind, token_hash, created_at, expires_at)
                 VALUES (1, 1, 'login', x'01', 1, 2), (1, 2, 'login', x'02', 1, 2);",
        )
        .unwrap();
        assert_eq!(apply(&mut conn).unwrap(), (15..=latest()).collect::<Vec<_>>());
        let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
        assert_eq!(count("SELECT count(*) FROM operators"), 2);
        assert_eq!(count("SELECT count(*) FROM operator_sites"), 1, "no cascade");
        assert_eq!(count("SELECT count(*) FROM operator_tokens"), 2, "no cascade");
        assert_eq!(count("SELECT count(*) FROM pragma_foreign_key_check"), 0);
        assert_eq!(count("PRAGMA foreign_keys"), 1, "on again");
        let duplicate = conn.execute(
            "INSERT INTO operators (tenant_id, email, name, password_hash, role, created_at) VALUES (1, 'ann@example.COM', 'A', 'h', 'agent', 1)",
            [],
        );
        assert!(duplicate.is_err(), "an email is unique whatever its case");
        let orphan = conn.execute("INSERT INTO operator_sites (tenant_id, operator_id, site_id) VALUES (1, 99, 1)", []);
        assert!(orphan.is_err(), "the references hold on the new table");
    }

    /// The summary kept on a conversation's row starts from its messages:
    /// the latest line the visitor and operators wrote, and the visitor's
    /// wait since its first message after the last reply.
    #[test]
    fn the_conversation_summary_is_filled_from_the_messages() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = crate::sqlite::connection::open_writer(&dir.path().join("old.sqlite3")).unwrap();
        apply_until(&mut conn, 24).unwrap();
        let long = "é".repeat(600);
        conn.execute_batch(&format!(
            "INSERT INTO tenants (id, slug, name, created_at) VALUES (1, 'acme', 'Acme', 1);
             INSERT INTO sites (id, tenant_id, name, domains, created_at) VALUES (1, 1, 'Site', '[]', 1);
             INSERT INTO installations (id, tenant_id, site_id, token, name, created_at) VALUES (1, 1, 1, 't', 'Web', 1);
             INSERT INTO visitors (id, tenant_id, site_id, uuid, created_at, updated_at) VALUES (1, 1, 1, 'v', 1, 1);
             INSERT INTO conversations (id, public_id, tenant_id, site_id, installation_id, visitor_id, status, created_at, last_message_at)
                 VALUES (1, 'c1', 1, 1, 1, 1, 'unassigned', 1, 9), (2, 'c2', 1, 1, 1, 1, 'unassigned', 1, 9),
                        (3, 'c3', 1, 1, 1, 1, 'unassigned', 1, 9), (4, 'c4', 1, 1, 1, 1, 'unassigned', 1, 9);
             INSERT INTO messages (tenant_id, conversation_id, sender_type, body, internal, created_at) VALUES
                 (1, 1, 'visitor', 'first', 0, 1), (1, 1, 'operator', 'reply', 0, 2), (1, 1, 'visitor', 'again', 0, 3),
                 (1, 1, 'visitor', 'and again', 0, 4), (1, 1, 'operator', 'a note', 1, 5), (1, 1, 'system', 'closed', 0, 6),
                 (1, 2, 'visitor', 'question', 0, 1), (1, 2, 'operator', 'answered', 0, 2), (1, 3, 'visitor', '{long}', 0, 7);"
        ))
        .unwrap();
        apply(&mut conn).unwrap();
        let summary = |id: i64| {
            conn.query_row("SELECT last_body, waiting_since FROM conversations WHERE id = ?1", [id], |r| {
                Ok((r.get::<_, Option<String>>(0)?, r.get::<_, Option<i64>>(1)?))
            })
            .unwrap()
        };
        assert_eq!(summary(1), (Some("and again".into()), Some(3)), "notes and system lines are not the latest line");
        assert_eq!(summary(2), (Some("answered".into()), None));
        assert_eq!(summary(3), (Some("é".repeat(500)), Some(7)), "500 characters, not bytes");
        assert_eq!(summary(4), (None, None), "no messages");
    }
}
