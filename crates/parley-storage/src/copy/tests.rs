//! Copies between real databases: SQLite files here, and PostgreSQL when
//! the suite runs on it.

use rusqlite::Connection;

use super::*;
use crate::sqlite::{connection, migrate};
use crate::testing;

const ROWS: &str = "
    INSERT INTO tenants (id, slug, name, created_at) VALUES (1, 'acme', 'Acme', 1), (2, 'b\"x', 'B', 2);
    INSERT INTO sites (id, tenant_id, name, created_at) VALUES (1, 1, 'Main', 1), (7, 2, 'Other', 2);
    INSERT INTO installations (id, tenant_id, site_id, token, name, enabled, created_at) VALUES (3, 1, 1, 'tok', 'Web', 0, 1);
    INSERT INTO operators (id, tenant_id, email, name, password_hash, role, active, created_at)
        VALUES (1, 1, 'a@acme.test', 'A', 'h', 'admin', 1, 1), (2, 1, 'b@acme.test', 'B', 'h', 'agent', 0, 1);
    INSERT INTO operator_sites (tenant_id, operator_id, site_id) VALUES (1, 2, 1), (1, 1, 1);
    INSERT INTO operator_tokens (id, tenant_id, operator_id, token_hash, created_at, expires_at) VALUES (1, 1, 1, x'00ff10', 1, 9);
    INSERT INTO visitors (id, tenant_id, site_id, uuid, name, created_at, updated_at) VALUES (4, 1, 1, 'v', 'Zoë ✓', 1, 1);
    INSERT INTO conversations (id, public_id, tenant_id, site_id, installation_id, visitor_id, status, created_at, last_message_at)
        VALUES (5, 'conv_1', 1, 1, 3, 4, 'unassigned', 1, 1);
    INSERT INTO messages (tenant_id, conversation_id, sender_type, body, internal, created_at)
        VALUES (1, 5, 'visitor', 'hello', 0, 1), (1, 5, 'operator', 'note', 1, 2), (1, 5, 'visitor', 'gone', 0, 3);
    DELETE FROM messages WHERE body = 'gone';
    INSERT INTO system_state (key, value) VALUES ('sweep', 42), ('a', 1);
";

fn seeded(dir: &std::path::Path) -> String {
    let path = dir.join("source.sqlite3");
    let mut conn = connection::open_writer(&path).unwrap();
    migrate::apply(&mut conn).unwrap();
    let many: String = (0..2500)
        .map(|n| {
            format!("INSERT INTO sandbox_outbox (tenant_id, channel, recipient, body, created_at) VALUES (1, 'sms', '+1', 'm{n}', {n});")
        })
        .collect();
    conn.execute_batch(&format!("BEGIN; {ROWS} {many} COMMIT;")).unwrap();
    format!("sqlite://{}", path.display())
}

/// A row's values by column name.
type Row = Vec<(String, rusqlite::types::Value)>;

fn table_names(conn: &Connection) -> Vec<String> {
    let all: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    all.into_iter().filter(|t| !super::catalog::is_search_table(t)).collect()
}

/// Every row of every table, columns by name, for comparing two files.
fn dump(url: &str) -> Vec<(String, Vec<Row>)> {
    let Ok(Location::Sqlite(path)) = Location::parse(url) else { panic!("{url}") };
    let conn = Connection::open(path).unwrap();
    let tables = table_names(&conn);
    tables
        .into_iter()
        .map(|t| {
            let mut stmt = conn.prepare(&format!("SELECT * FROM \"{t}\" ORDER BY 1, 2")).unwrap();
            let names: Vec<String> = stmt.column_names().map(str::to_owned).collect();
            let rows = stmt
                .query_map([], |r| {
                    let mut row: Vec<_> = names.iter().enumerate().map(|(i, n)| (n.clone(), r.get(i).unwrap())).collect();
                    row.sort_by(|a: &(String, _), b| a.0.cmp(&b.0));
                    Ok(row)
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            (t, rows)
        })
        .collect()
}

#[derive(Default)]
struct Counted(std::cell::Cell<u64>, std::cell::Cell<u64>);

impl Progress for Counted {
    fn start(&self, total: u64) {
        self.0.set(total);
    }
    fn copied(&self, rows: u64) {
        self.1.set(self.1.get() + rows);
    }
}

#[test]
fn sqlite_to_sqlite_keeps_every_row_and_the_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let source = seeded(dir.path());
    let target = format!("sqlite://{}/copy/target.sqlite3", dir.path().display());
    let progress = Counted::default();
    let report = copy(&source, &target, &progress).expect("copied");
    assert_eq!(report.rows(), 2516);
    assert_eq!((progress.0.get(), progress.1.get()), (2516, 2516), "the progress saw every row");
    let tables: Vec<&str> = report.tables.iter().map(|t| t.name.as_str()).collect();
    assert!(tables.iter().position(|t| *t == "tenants") < tables.iter().position(|t| *t == "sites"), "{tables:?}");
    // Includes sqlite_sequence: the deleted message's id stays used.
    assert_eq!(dump(&source), dump(&target));

    let e = copy(&source, &target, &()).expect_err("the target has rows now");
    assert!(matches!(e, CopyError::NotEmpty { .. }), "{e}");
}

/// A table a later migration adds is found in the catalog, and one
/// without a primary key is read in batches all the same.
#[test]
fn tables_are_found_in_the_catalog_with_or_without_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let source = seeded(dir.path());
    let table = "CREATE TABLE later_table (email TEXT NOT NULL, at INTEGER NOT NULL, tenant_id INTEGER REFERENCES tenants(id));";
    let Ok(Location::Sqlite(path)) = Location::parse(&source) else { panic!() };
    let rows: String = (0..2100).map(|n| format!("INSERT INTO later_table VALUES ('a{}@b.c', {n}, 1);", n % 7)).collect();
    Connection::open(path).unwrap().execute_batch(&format!("BEGIN; {table} {rows} COMMIT;")).unwrap();
    let target = dir.path().join("target.sqlite3");
    let mut conn = connection::open_writer(&target).unwrap();
    migrate::apply(&mut conn).unwrap();
    conn.execute_batch(table).unwrap();
    drop(conn);
    let target = format!("sqlite://{}", target.display());
    let report = copy(&source, &target, &()).expect("copied");
    assert!(report.tables.contains(&TableReport { name: "later_table".into(), rows: 2100 }), "{report:?}");
    assert_eq!(dump(&source), dump(&target));
}

#[test]
fn sources_that_are_missing_or_behind_are_refused_and_nothing_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t.sqlite3");
    let to = format!("sqlite://{}", target.display());
    let e = copy(&format!("sqlite://{}/nope.sqlite3", dir.path().display()), &to, &()).unwrap_err();
    assert!(matches!(e, CopyError::SourceMissing(_)), "{e}");

    let old = dir.path().join("old.sqlite3");
    let conn = Connection::open(&old).unwrap();
    conn.execute_batch("CREATE TABLE tenants (id INTEGER PRIMARY KEY); PRAGMA user_version = 3;").unwrap();
    drop(conn);
    let e = copy(&format!("sqlite://{}", old.display()), &to, &()).unwrap_err();
    assert!(e.to_string().contains("schema version 3") && e.to_string().contains("parley migrate"), "{e}");
    assert!(!target.exists(), "no target file was made");

    let e = copy("mysql://root:secret@db/x", &to, &()).unwrap_err();
    assert!(matches!(e, CopyError::Url { side: Side::Source, .. }) && !e.to_string().contains("secret"), "{e}");
    let source = seeded(dir.path());
    assert!(matches!(copy(&source, &source.replace("sqlite://", "sqlite:"), &()), Err(CopyError::SameDatabase)));
}

#[test]
fn a_value_that_does_not_fit_stops_the_copy_and_removes_the_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let source = seeded(dir.path());
    let Ok(Location::Sqlite(path)) = Location::parse(&source) else { panic!() };
    Connection::open(path).unwrap().execute_batch("UPDATE messages SET internal = 'yes' WHERE body = 'note'").unwrap();
    let target = dir.path().join("t.sqlite3");
    let e = copy(&source, &format!("sqlite://{}", target.display()), &()).unwrap_err();
    assert!(e.to_string().contains("table messages, column internal"), "{e}");
    for file in ["t.sqlite3", "t.sqlite3-wal", "t.sqlite3-shm"] {
        assert!(!dir.path().join(file).exists(), "{file} removed");
    }
}

/// SQLite to PostgreSQL and back: the same rows, and PostgreSQL's
/// sequences past every copied id (and the deleted one).
#[test]
fn sqlite_to_postgres_and_back() {
    let Some(server) = testing::postgres_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let source = seeded(dir.path());
    let pg = testing::fresh_postgres(&server).unwrap();
    assert_eq!(copy(&source, &pg.url, &()).expect("to PostgreSQL").rows(), 2516);
    let back = format!("sqlite://{}/back.sqlite3", dir.path().display());
    assert_eq!(copy(&pg.url, &back, &()).expect("back to SQLite").rows(), 2516);
    assert_eq!(dump(&source), dump(&back));

    let mut client = crate::postgres::connector(&pg.url).unwrap().blocking().unwrap();
    let id: i64 = client
        .query_one("INSERT INTO messages (tenant_id, conversation_id, sender_type, body, created_at) VALUES (1, 5, 'visitor', 'new', 4) RETURNING id", &[])
        .unwrap()
        .get(0);
    assert_eq!(id, 4, "after the deleted message 3");
    let id: i64 = client.query_one("INSERT INTO tenants (slug, name, created_at) VALUES ('c', 'C', 3) RETURNING id", &[]).unwrap().get(0);
    assert_eq!(id, 3);
    let e = copy(&source, &pg.url, &()).unwrap_err();
    assert!(matches!(e, CopyError::NotEmpty { .. }), "{e}");
}

/// A table whose rows all went leaves SQLite's counter at 0 for it (or
/// names 0 when only its row was made); PostgreSQL's sequence then starts
/// at 1 rather than refusing 0.
#[test]
fn an_emptied_autoincrement_table_copies_to_postgres() {
    let Some(server) = testing::postgres_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let source = seeded(dir.path());
    let Ok(Location::Sqlite(path)) = Location::parse(&source) else { panic!() };
    Connection::open(path).unwrap().execute_batch("INSERT OR REPLACE INTO sqlite_sequence (name, seq) VALUES ('push_outbox', 0)").unwrap();
    let pg = testing::fresh_postgres(&server).unwrap();
    copy(&source, &pg.url, &()).expect("to PostgreSQL");
}

/// A database that holds another application's tables, even empty ones,
/// is refused before anything of Parley's is created in it.
#[test]
fn a_target_with_tables_that_are_not_parleys_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let source = seeded(dir.path());
    let target = dir.path().join("other-app.sqlite3");
    Connection::open(&target).unwrap().execute_batch("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total INTEGER);").unwrap();
    let e = copy(&source, &format!("sqlite://{}", target.display()), &()).expect_err("another application's database");
    assert!(matches!(&e, CopyError::Schema(reason) if reason.contains("invoices")), "{e}");
    let tables = table_names(&Connection::open(&target).unwrap());
    assert_eq!(tables, ["invoices"], "nothing was created in it");
}

/// The migrations of both databases make the same schema: tables,
/// columns of the same kind and nullability, keys, indexes and unique
/// rules, whatever they are called.
#[test]
fn both_databases_have_one_schema() {
    let Some(server) = testing::postgres_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("schema.sqlite3");
    migrate::apply(&mut connection::open_writer(&path).unwrap()).unwrap();
    let pg = testing::fresh_postgres(&server).unwrap();
    let found = schema_differences(&format!("sqlite://{}", path.display()), &pg.url).expect("both read");
    assert!(found.is_empty(), "the schemas differ:\n{}", found.join("\n"));
}

#[test]
fn index_definitions_read_alike_from_both_databases() {
    use super::catalog::Index;
    let sqlite = Index::from_definition(
        "messages",
        true,
        "CREATE UNIQUE INDEX messages_client_message\n    ON messages (conversation_id, sender_type, COALESCE(sender_id, 0), client_message_id)\n    WHERE client_message_id IS NOT NULL",
    );
    let postgres = Index::from_definition(
        "messages",
        true,
        "CREATE UNIQUE INDEX messages_client_message ON public.messages USING btree (conversation_id, sender_type, COALESCE(sender_id, (0)::bigint), client_message_id) WHERE (client_message_id IS NOT NULL)",
    );
    assert_eq!(sqlite, postgres);
    let s = Index::from_definition("c", false, "CREATE INDEX c_idle ON conversations (last_message_at DESC, id) WHERE status <> 'closed'");
    let p = Index::from_definition(
        "c",
        false,
        "CREATE INDEX c_idle ON public.conversations USING btree (last_message_at DESC, id) WHERE (status <> 'closed'::text)",
    );
    assert_eq!(s, p);
    assert_eq!(s.unwrap().columns, ["last_message_atdesc", "id"]);
}
