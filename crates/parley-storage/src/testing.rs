//! Fresh databases and fixtures for tests.
//!
//! `PARLEY_TEST_DATABASE_URL=postgres://…` points the test suites at a
//! PostgreSQL server; each test then gets a database of its own, copied
//! from a template that is migrated once per schema version (a copy takes
//! a fraction of a second, migrating every time would not). Without it,
//! tests use SQLite files.

use std::sync::atomic::{AtomicU64, Ordering};

use parley_domain::model::{SiteScope, TenantId, WidgetAppearance};
use parley_domain::tenancy::{NewSiteInput, NewTenantInput, Tenancy};
use postgres::Client;

use crate::postgres::migrate;

/// The password of every test operator.
pub const PASSWORD: &str = "a long test password";

/// A test tenant `slug`, whose first admin is `admin@<slug>.example.com`.
pub fn tenant_input(slug: &str) -> NewTenantInput {
    NewTenantInput {
        slug: slug.into(),
        name: format!("{slug} Inc."),
        admin_email: format!("admin@{slug}.example.com"),
        admin_password: PASSWORD.into(),
    }
}

/// A test site `name` listing `domains`.
pub fn site_input(name: &str, domains: &[&str]) -> NewSiteInput {
    NewSiteInput {
        name: name.into(),
        domains: domains.iter().map(|d| d.to_string()).collect(),
        appearance: WidgetAppearance {
            title: "Talk to us".into(),
            greeting: "Hi!".into(),
            accent_color: "#0f766e".into(),
            privacy_text: "We keep your messages.".into(),
            privacy_url: Some("https://example.com/privacy".into()),
        },
    }
}

/// One tenant with one site and one installation.
#[derive(Clone, Debug)]
pub struct Fixture {
    pub slug: String,
    pub scope: SiteScope,
    /// The installation's token.
    pub token: String,
}

/// A tenant `slug` with a site (listing `domains`) and one installation,
/// made through the tenancy service.
pub async fn fixture(tenancy: &Tenancy, slug: &str, domains: &[&str]) -> Fixture {
    let (tenant, _) = tenancy.create_tenant(tenant_input(slug)).await.expect("tenant");
    site(tenancy, &tenant.slug, tenant.id, domains).await
}

/// Another site (with its installation) of an existing tenant.
pub async fn site(tenancy: &Tenancy, slug: &str, tenant: TenantId, domains: &[&str]) -> Fixture {
    let site = tenancy.create_site(tenant, site_input(&format!("{slug} site"), domains), None).await.expect("site");
    let scope = SiteScope { tenant, site: site.id };
    let installation = tenancy.create_installation(scope, "Main website".into(), "web".into(), None).await.expect("installation");
    Fixture { slug: slug.into(), scope, token: installation.token }
}

/// 2026-01-01T00:00:00Z: tests start here and move the clock by hand.
pub const START: parley_domain::Timestamp = parley_domain::Timestamp::from_millis(1_767_225_600_000);

/// A fresh, empty database of the backend under test: a PostgreSQL
/// database when `PARLEY_TEST_DATABASE_URL` names a server, else an SQLite
/// file `file` in `dir`. Keep the guard as long as the database is used.
pub async fn fresh_database(dir: &std::path::Path, file: &str) -> (String, Option<TestDatabase>) {
    match postgres_url() {
        Some(server) => {
            let db = tokio::task::spawn_blocking(move || fresh_postgres(&server))
                .await
                .expect("blocking task")
                .expect("a fresh PostgreSQL database");
            (db.url.clone(), Some(db))
        }
        None => (format!("sqlite://{}/{file}", dir.display()), None),
    }
}

/// "postgres" or "sqlite": the backend the suites run on.
pub fn backend() -> &'static str {
    if postgres_url().is_some() { "postgres" } else { "sqlite" }
}

/// Ends every connection to the PostgreSQL database at `url` from the
/// server side (a restart, a proxy dropping them), as `psql` does; returns
/// how many.
pub fn terminate_connections(url: &str) -> i64 {
    let url = url.to_owned();
    // Its own thread: the blocking client runs a runtime of its own, which
    // may not start inside the test's.
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect to terminate");
        let row = client
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) AS killed FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()",
                &[],
            )
            .expect("terminate");
        row.get::<_, i64>("killed")
    })
    .join()
    .expect("terminating thread")
}

/// The server the suites run against, if one was given.
pub fn postgres_url() -> Option<String> {
    std::env::var("PARLEY_TEST_DATABASE_URL").ok().filter(|u| !u.is_empty())
}

/// A database that is dropped when this value is.
pub struct TestDatabase {
    pub url: String,
    admin_url: String,
    name: String,
}

fn with_database(url: &str, name: &str) -> Result<String, String> {
    let mut parsed = url::Url::parse(url).map_err(|e| e.to_string())?;
    parsed.set_path(&format!("/{name}"));
    Ok(parsed.to_string())
}

/// Connects as Parley does, so a test URL asking for TLS works here too.
fn connect(url: &str) -> Result<Client, String> {
    crate::postgres::connector(url).and_then(|c| c.blocking()).map_err(|e| format!("cannot reach the test PostgreSQL at {url}: {e}"))
}

/// Creates a fresh, migrated database on the server `server_url` names.
/// Blocking: call it from a blocking thread.
pub fn fresh_postgres(server_url: &str) -> Result<TestDatabase, String> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let admin_url = with_database(server_url, "postgres")?;
    let mut admin = connect(&admin_url)?;
    let template = format!("parley_template_{:016x}", migrate::fingerprint());
    admin.execute("SELECT pg_advisory_lock($1)", &[&crate::locks::TEST_TEMPLATE]).map_err(|e| e.to_string())?;
    let prepared = prepare_template(&mut admin, server_url, &template);
    let _ = admin.execute("SELECT pg_advisory_unlock($1)", &[&crate::locks::TEST_TEMPLATE]);
    prepared?;
    // Unique per process, call and moment: a run killed earlier may have
    // left databases behind under the same process id.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let name = format!("parley_test_{}_{}_{nanos:08x}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
    let mut tries = 0;
    loop {
        match admin.batch_execute(&format!("CREATE DATABASE {name} TEMPLATE {template}")) {
            Ok(()) => break,
            // Another process may be copying the template this instant.
            Err(e) if tries < 50 && e.to_string().contains("being accessed by other users") => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(format!("cannot create {name}: {e}")),
        }
    }
    Ok(TestDatabase { url: with_database(server_url, &name)?, admin_url, name })
}

fn prepare_template(admin: &mut Client, server_url: &str, template: &str) -> Result<(), String> {
    let exists = admin.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&template]).map_err(|e| e.to_string())?.is_some();
    if exists {
        return Ok(());
    }
    // A template left half-made by a killed run is replaced.
    let building = format!("{template}_building");
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)")).map_err(|e| e.to_string())?;
    admin.batch_execute(&format!("CREATE DATABASE {building}")).map_err(|e| e.to_string())?;
    {
        let mut client = connect(&with_database(server_url, &building)?)?;
        migrate::apply(&mut client).map_err(|e| e.to_string())?;
    }
    admin.batch_execute(&format!("ALTER DATABASE {building} RENAME TO {template}")).map_err(|e| e.to_string())?;
    Ok(())
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let (admin_url, name) = (self.admin_url.clone(), self.name.clone());
        // The blocking client may not run on a runtime thread, and this
        // is dropped from async tests.
        let dropped = std::thread::spawn(move || {
            let mut admin = connect(&admin_url)?;
            admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).map_err(|e| e.to_string())
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("could not drop test database {}: {e}", self.name);
        }
    }
}
