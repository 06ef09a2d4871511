//! The PostgreSQL backend.
//!
//! A fixed set of threads, one per connection (`PARLEY_DATABASE_POOL`),
//! takes units of work from one queue. A write unit runs in a transaction
//! of its own and is answered after its COMMIT returns, which with
//! `synchronous_commit = on` (set on every connection) means the commit is
//! on disk; PostgreSQL groups the flushes of concurrent commits itself. A
//! read unit runs in a read-only, repeatable-read transaction: one
//! snapshot, as on SQLite. A failing unit, or one whose statement failed,
//! is rolled back. What a unit does not wait for (its BEGIN and COMMIT,
//! deferred writes) travels with its next statement: see `conn.rs`.
//!
//! Units run side by side here, unlike on SQLite's single writer, so a
//! write unit locks the rows it reads in order to change them (the
//! conversation, the visitor, the challenge: see `Dialect::for_update`),
//! the verification limits' counts wait for one another
//! (`Dialect::transaction_lock`), and a message insert locks its
//! conversation, which keeps message ids in commit order within a
//! conversation. A deadlock between units is detected by PostgreSQL; the
//! unit it picks is rolled back and its caller told to try again
//! ("unavailable"), never left half-written.

mod conn;
mod error;
mod instances;
pub(crate) mod migrate;
#[cfg(test)]
mod plans;
mod target;
mod tls;

use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};

use parley_domain::store::{Backend, Database, Lead, ReadJob, StoreError, StoreResult, WriteJob};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::OpenError;
use crate::backend::{Queue, Signals, Threads, closed};
use crate::sql::Tx;
use conn::PgConn;
pub(crate) use error::describe;
use error::map;
use instances::{Instances, Outgoing};

enum Job {
    Read(ReadJob),
    Write(WriteJob),
}

/// How to open one more connection.
pub(crate) struct Connector {
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
}

impl Connector {
    /// A plain blocking client, for the migrations.
    pub(crate) fn blocking(&self) -> Result<postgres::Client, OpenError> {
        postgres::Config::from(self.config.clone()).connect(self.tls.clone()).map_err(|e| OpenError::Postgres(map(e).to_string()))
    }
}

struct PgBackend {
    signals: Arc<Signals>,
    jobs: Queue<Job>,
    threads: Threads,
    instances: Instances,
    /// What the listener tells the other instances.
    outgoing: Arc<Outgoing>,
}

pub(crate) fn connector(url: &str) -> Result<Connector, OpenError> {
    let target = target::parse(url).map_err(OpenError::Postgres)?;
    let tls = tls::connector(&target.verify).map_err(OpenError::Postgres)?;
    Ok(Connector { config: target.config, tls })
}

pub(crate) async fn open(url: String, pool: usize) -> Result<Database, OpenError> {
    let connector = Arc::new(connector(&url)?);
    let (signals, outgoing) = (Arc::new(Signals::default()), Arc::new(Outgoing::default()));
    let opened = {
        let (connector, signals, outgoing) = (Arc::clone(&connector), Arc::clone(&signals), Arc::clone(&outgoing));
        tokio::task::spawn_blocking(move || open_blocking(&connector, pool, signals, outgoing))
            .await
            .map_err(|e| OpenError::Postgres(e.to_string()))??
    };
    let (jobs, threads) = opened;
    let instances = Instances::start(connector, Arc::clone(&signals), Arc::clone(&outgoing));
    Ok(Database::new(Arc::new(PgBackend { signals, jobs, threads, instances, outgoing })))
}

pub(crate) async fn migrate_only(url: String) -> Result<Vec<u32>, OpenError> {
    tokio::task::spawn_blocking(move || migrate::apply(&mut connector(&url)?.blocking()?))
        .await
        .map_err(|e| OpenError::Postgres(e.to_string()))?
}

/// Refuses a database whose encoding is not UTF8. Parley's text is UTF-8
/// and statements cut it by characters (a conversation's latest line):
/// in another encoding (SQL_ASCII counts bytes) a cut could store half a
/// character, which no later read could decode.
pub(crate) fn require_utf8(client: &mut postgres::Client) -> Result<(), OpenError> {
    let encoding: String = client
        .query_one("SELECT current_setting('server_encoding') AS encoding", &[])
        .and_then(|row| row.try_get("encoding"))
        .map_err(|e| OpenError::Postgres(describe(&e)))?;
    if encoding == "UTF8" {
        return Ok(());
    }
    Err(OpenError::Postgres(format!(
        "the database's encoding is {encoding}, and Parley needs UTF8: \
         CREATE DATABASE ... ENCODING 'UTF8' TEMPLATE template0, then copy the data over"
    )))
}

pub(crate) fn inspect(url: &str) -> Result<crate::Schema, OpenError> {
    let fail = |e: postgres::Error| OpenError::Postgres(describe(&e));
    let mut client = connector(url)?.blocking()?;
    require_utf8(&mut client)?;
    let row = client
        .query_one(
            "SELECT current_setting('server_version') AS server, to_regclass('parley_migrations') IS NOT NULL AS migrated, \
             pg_is_in_recovery() AS standby, current_schema() AS schema, \
             has_schema_privilege(current_schema(), 'CREATE') AS can_create, \
             NOT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() \
                         AND NOT pg_has_role(tableowner, 'USAGE')) AS owns_tables",
            &[],
        )
        .map_err(fail)?;
    if row.try_get::<_, bool>("standby").map_err(fail)? {
        return Err(OpenError::Postgres("the server is a read-only standby: point PARLEY_DATABASE_URL at the primary".into()));
    }
    let schema: Option<String> = row.try_get("schema").map_err(fail)?;
    let can_create: Option<bool> = row.try_get("can_create").map_err(fail)?;
    let owns_tables: bool = row.try_get("owns_tables").map_err(fail)?;
    let server: String = row.try_get("server").map_err(fail)?;
    let migrated: bool = row.try_get("migrated").map_err(fail)?;
    let version: i64 = if migrated {
        client
            .query_one("SELECT COALESCE(MAX(version), 0) AS v FROM parley_migrations", &[])
            .and_then(|row| row.try_get("v"))
            .map_err(fail)?
    } else {
        0
    };
    let version = u32::try_from(version).unwrap_or(u32::MAX);
    // What applying the pending migrations needs: a schema to make
    // tables in, the right to, and owning the tables they change.
    if version < migrate::latest() {
        let refusal = match (schema, can_create, owns_tables) {
            (None, _, _) => Some("no schema its search_path names exists".to_owned()),
            (Some(schema), can_create, _) if can_create != Some(true) => Some(format!(
                "this role cannot create tables in schema {schema}: GRANT CREATE ON SCHEMA {schema} to it \
                 (PostgreSQL 15 no longer grants it on public), or make it the database's owner"
            )),
            (Some(schema), _, false) => {
                Some(format!("tables in schema {schema} belong to another role, and a migration must own what it changes"))
            }
            _ => None,
        };
        if let Some(refusal) = refusal {
            return Err(OpenError::Postgres(format!("migrations are to be applied, and {refusal}")));
        }
    }
    Ok(crate::Schema { made: true, version, latest: migrate::latest(), server: format!("PostgreSQL {server}") })
}

pub(crate) fn prepare_all(url: &str) -> Result<usize, String> {
    let connector = Arc::new(connector(url).map_err(|e| e.to_string())?);
    migrate::apply(&mut connector.blocking().map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let mut conn = PgConn::open(connector).map_err(|e| e.to_string())?;
    crate::sql::prepare_every(&mut conn)
}

/// Feed positions lead with the writing transaction's id, which only
/// orders entries within one server: after a dump and restore (or a
/// logical copy) onto another, the copied ids may be above every id the
/// new server hands out, and its new entries would sort behind them. Such
/// entries start again at 0, as `parley db copy` does; clients holding
/// their cursors reload once.
fn restart_foreign_feed_positions(client: &mut postgres::Client) -> Result<(), OpenError> {
    let restarted = client
        .execute(&format!("UPDATE events SET tx = 0 WHERE tx >= {}", crate::sql::Dialect::Postgres.writing_tx()), &[])
        .map_err(|e| OpenError::Postgres(describe(&e)))?;
    if restarted > 0 {
        tracing::warn!(entries = restarted, "feed positions came from another server; they start again at 0");
    }
    Ok(())
}

/// Migrates and starts the pool's threads.
fn open_blocking(
    connector: &Arc<Connector>,
    pool: usize,
    signals: Arc<Signals>,
    outgoing: Arc<Outgoing>,
) -> Result<(Queue<Job>, Threads), OpenError> {
    let mut client = connector.blocking()?;
    let applied = migrate::apply(&mut client)?;
    restart_foreign_feed_positions(&mut client)?;
    drop(client);
    if !applied.is_empty() {
        tracing::info!(?applied, "applied database migrations");
    }
    let (jobs, receiver) = Queue::new();
    let receiver = Arc::new(Mutex::new(receiver));
    let mut threads = Vec::new();
    for n in 0..pool.max(1) {
        let (connector, receiver) = (Arc::clone(connector), Arc::clone(&receiver));
        let (signals, outgoing) = (Arc::clone(&signals), Arc::clone(&outgoing));
        let thread = std::thread::Builder::new()
            .name(format!("postgres-{n}"))
            .spawn(move || work(&connector, &receiver, &signals, &outgoing))
            .map_err(|e| OpenError::Postgres(e.to_string()))?;
        threads.push(thread);
    }
    Ok((jobs, Threads::new(threads)))
}

/// One connection's thread: takes units until the queue is closed and
/// empty, (re)connecting when it has no live connection.
fn work(connector: &Arc<Connector>, jobs: &Mutex<Receiver<Job>>, signals: &Signals, outgoing: &Outgoing) {
    let mut conn: Option<PgConn> = None;
    loop {
        let job = {
            let Ok(receiver) = jobs.lock() else { return };
            match receiver.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        };
        if conn.as_ref().is_none_or(PgConn::is_closed) {
            conn = match PgConn::open(Arc::clone(connector)) {
                Ok(c) => Some(c),
                Err(e) => {
                    tracing::error!(error = %e, "cannot connect to PostgreSQL");
                    if let Job::Read(job) = job {
                        job(Err(e));
                    }
                    // A dropped write unit answers its caller "unavailable".
                    continue;
                }
            };
        }
        let Some(c) = conn.as_mut() else { continue };
        match job {
            Job::Read(job) => {
                c.begin(READ);
                job(Ok(&mut Tx::read(c)));
                if c.commit().is_err() {
                    c.rollback();
                }
            }
            Job::Write(job) => write(c, job, signals, outgoing),
        }
    }
}

/// A read unit sees one snapshot, as on SQLite: a list and its count, a
/// delivery and its attempts agree with each other.
const READ: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

fn write(c: &mut PgConn, job: WriteJob, signals: &Signals, outgoing: &Outgoing) {
    c.begin("BEGIN");
    let mut tx = Tx::write(c);
    let outcome = job(&mut tx);
    let mut effects = tx.effects;
    let changed = std::mem::take(&mut tx.changed);
    let result = if outcome.keep && !c.failed {
        let committed = c.commit();
        if committed.is_err() {
            // Whatever stopped the commit, leave no transaction open behind it.
            c.rollback();
        }
        committed
    } else {
        c.rollback();
        if outcome.keep {
            // The unit carried on past a failed statement; PostgreSQL had
            // already given the whole transaction up.
            Err(StoreError::Internal("a statement of the unit failed, so nothing of it was kept".into()))
        } else {
            Ok(())
        }
    };
    if result.is_ok() && outcome.keep {
        effects.deliveries_added += c.deliveries_added;
        signals.conversations_changed(&changed);
        outgoing.after_commit(&effects);
        signals.after_commit(effects);
    }
    (outcome.on_commit)(result);
}

impl Backend for PgBackend {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn submit_read(&self, job: ReadJob) {
        if self.threads.is_closed() {
            job(Err(closed()));
        } else if let Err(Job::Read(job)) = self.jobs.send(Job::Read(job)) {
            job(Err(StoreError::Unavailable("the database queue is full".into())));
        }
    }

    fn submit_write(&self, job: WriteJob) {
        // A unit that cannot be queued is dropped, which answers its
        // caller "database unavailable"; nothing was written.
        let _ = self.jobs.send(Job::Write(job));
    }

    fn deliveries_signal(&self) -> Arc<tokio::sync::Notify> {
        self.signals.deliveries()
    }

    fn feed_signal(&self) -> Arc<tokio::sync::Notify> {
        self.signals.feed()
    }

    fn pushes_signal(&self) -> Arc<tokio::sync::Notify> {
        self.signals.pushes()
    }

    fn installations_generation(&self) -> u64 {
        self.signals.installations_generation()
    }

    fn conversation_changes(&self) -> Arc<parley_domain::feed::Changes> {
        self.signals.changes()
    }

    fn messages_created(&self) -> parley_domain::store::MessageCounts {
        self.signals.messages_created()
    }

    fn broadcast(&self, text: String) {
        self.outgoing.say(text);
    }

    fn heard(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.signals.heard()
    }

    fn lead(&self, task: &'static str) -> Pin<Box<dyn Future<Output = StoreResult<Option<Lead>>> + Send + '_>> {
        Box::pin(async move {
            let key = crate::locks::named(task);
            if !self.instances.try_lock(key).await? {
                return Ok(None);
            }
            let unlocker = self.instances.unlocker();
            Ok(Some(Lead::until_dropped(move || unlocker.unlock(key))))
        })
    }

    fn close(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            self.jobs.close();
            self.threads.close().await;
            self.instances.stop().await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;
    use parley_domain::store::StoreResult;

    fn with_query(url: &str, query: &str) -> String {
        format!("{url}{}{query}", if url.contains('?') { '&' } else { '?' })
    }

    fn connect(url: &str) -> StoreResult<PgConn> {
        PgConn::open(Arc::new(connector(url).unwrap()))
    }

    fn encrypted(conn: &PgConn) -> bool {
        conn.link().run(|c| c.query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[])).expect("pg_stat_ssl").get(0)
    }

    /// `sslmode` keeps libpq's meaning against the test server: `disable`
    /// stays in plain text, `require` encrypts (or refuses a server without
    /// TLS), `verify-full` refuses a certificate no known authority signed.
    /// Runs when the suite runs on PostgreSQL.
    #[test]
    fn connections_encrypt_as_sslmode_asks() {
        let Some(server) = testing::postgres_url() else { return };
        let db = testing::fresh_postgres(&server).expect("database");
        let plain = connect(&with_query(&db.url, "sslmode=disable")).expect("plain connection");
        assert!(!encrypted(&plain));
        let server_has_tls: String = plain.link().run(|c| c.query_one("SHOW ssl", &[])).unwrap().get(0);
        let required = connect(&with_query(&db.url, "sslmode=require"));
        if server_has_tls == "on" {
            assert!(encrypted(&required.expect("TLS connection")), "sslmode=require encrypts");
            let verified = connect(&with_query(&db.url, "sslmode=verify-full"));
            assert!(verified.is_err(), "the test server's self-signed certificate is refused");
        } else {
            assert!(required.is_err(), "sslmode=require never falls back to plain text");
        }
    }

    /// A database in another encoding than UTF8 is refused by name, by
    /// `parley serve` (which migrates first) and by `parley check`, before
    /// anything is written to it.
    #[test]
    fn a_database_not_in_utf8_is_refused() {
        let Some(server) = testing::postgres_url() else { return };
        let db = testing::fresh_postgres(&server).expect("database");
        let mut url = url::Url::parse(&db.url).unwrap();
        let name = format!("{}_ascii", url.path().trim_start_matches('/'));
        url.set_path(&name);
        let url = url.to_string();
        let mut admin = connector(&db.url).unwrap().blocking().unwrap();
        admin
            .batch_execute(&format!("CREATE DATABASE {name} ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"))
            .unwrap();
        let migrated = migrate::apply(&mut connector(&url).unwrap().blocking().unwrap());
        let inspected = inspect(&url);
        let made: bool = connector(&url)
            .unwrap()
            .blocking()
            .unwrap()
            .query_one("SELECT to_regclass('parley_migrations') IS NOT NULL", &[])
            .unwrap()
            .get(0);
        admin.batch_execute(&format!("DROP DATABASE {name} WITH (FORCE)")).unwrap();
        for outcome in [migrated.map(|_| ()), inspected.map(|_| ())] {
            let error = outcome.expect_err("refused").to_string();
            assert!(error.contains("encoding is SQL_ASCII") && error.contains("UTF8"), "{error}");
        }
        assert!(!made, "nothing was written");
    }

    /// Two processes starting at once both open the database; the
    /// migrations ran once.
    #[test]
    fn concurrent_starts_migrate_once() {
        let Some(server) = testing::postgres_url() else { return };
        let db = testing::fresh_postgres(&server).expect("database");
        let mut admin = connector(&db.url).unwrap().blocking().unwrap();
        admin.batch_execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public;").unwrap();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let url = db.url.clone();
                std::thread::spawn(move || migrate::apply(&mut connector(&url).unwrap().blocking().unwrap()))
            })
            .collect();
        let applied: Vec<Vec<u32>> = threads.into_iter().map(|t| t.join().unwrap().expect("migrated")).collect();
        assert_eq!(applied.iter().filter(|a| !a.is_empty()).count(), 1, "one start applied them: {applied:?}");
        let versions: i64 = admin.query_one("SELECT COUNT(*) FROM parley_migrations", &[]).unwrap().get(0);
        assert_eq!(versions, i64::try_from(applied.concat().len()).unwrap(), "each version recorded once");
    }
}
