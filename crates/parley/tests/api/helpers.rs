//! The test harness: a running server with its own database and clock,
//! and fixtures that create tenants, sites and installations through the
//! domain layer (the admin API that would do it comes later).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use parley::{Application, Config, Mode};
use parley_domain::model::{Role, SiteId};
use parley_domain::tenancy::Tenancy;
use parley_domain::{Database, ManualClock};
use parley_storage::testing::TestDatabase;
pub use parley_storage::testing::{Fixture, PASSWORD, START, backend, fresh_database, terminate_connections};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Both prefixes the contract publishes; every route test runs under each.
pub const PREFIXES: [&str; 2] = ["/api", "/api/v1"];

pub struct TestApp {
    pub base: String,
    /// The separate metrics address, when `PARLEY_METRICS_LISTEN` is set.
    pub metrics_base: Option<String>,
    pub client: reqwest::Client,
    pub db: Database,
    pub clock: Arc<ManualClock>,
    pub tenancy: Tenancy,
    /// The database this server uses.
    pub database_url: String,
    shutdown: CancellationToken,
    server: Option<JoinHandle<std::io::Result<()>>>,
    pub dir: TempDir,
    /// Dropped last: the PostgreSQL database, if the suite runs on one.
    _database: Option<TestDatabase>,
}

/// Runs `sql` on the database at `url`, the way an administrator would
/// outside Parley.
pub async fn run_sql(url: &str, sql: &str) {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    tokio::task::spawn_blocking(move || match url.strip_prefix("sqlite://") {
        Some(path) => rusqlite::Connection::open(path).expect("open").execute_batch(&sql).expect("sql"),
        None => postgres::Client::connect(&url, postgres::NoTls).expect("connect").batch_execute(&sql).expect("sql"),
    })
    .await
    .expect("blocking task");
}

pub struct Spawn {
    vars: BTreeMap<String, String>,
    mode: Mode,
}

impl Spawn {
    pub fn var(mut self, k: &str, v: &str) -> Self {
        self.vars.insert(k.to_owned(), v.to_owned());
        self
    }

    pub fn demo(mut self) -> Self {
        self.mode = Mode::Demo;
        self
    }

    pub async fn start(self) -> TestApp {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut vars = self.vars;
        vars.insert("PARLEY_LISTEN".into(), "127.0.0.1:0".into());
        let mut database = None;
        if !vars.contains_key("PARLEY_DATABASE_URL") {
            let (url, guard) = fresh_database(dir.path(), "parley.sqlite3").await;
            vars.insert("PARLEY_DATABASE_URL".into(), url);
            database = guard;
        }
        // Tests run side by side; a few connections each keep the server
        // well under its connection limit.
        vars.entry("PARLEY_DATABASE_POOL".into()).or_insert_with(|| "4".into());
        let database_url = vars["PARLEY_DATABASE_URL"].clone();
        vars.entry("PARLEY_RATE_LIMITS".into()).or_insert_with(|| "off".into());
        // Attachments go to the test's own folder, never the working one.
        vars.entry("PARLEY_FILES_URL".into()).or_insert_with(|| format!("file://{}/files", dir.path().display()));
        let (config, _) = Config::from_vars(&vars).expect("test configuration");
        let clock = ManualClock::new(START);
        let app = Application::build(&config, self.mode, clock.clone()).await.expect("application starts");
        // Requests go to the socket; PARLEY_PUBLIC_URL may name another host.
        let base = format!("http://{}", app.local_addr());
        let metrics_base = app.metrics_addr().map(|a| format!("http://{a}"));
        let db = app.database().clone();
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(app.run(shutdown.clone()));
        let tenancy = Tenancy::new(db.clone(), clock.clone());
        TestApp {
            base,
            metrics_base,
            client: http_client(),
            db,
            clock,
            tenancy,
            database_url,
            shutdown,
            server: Some(server),
            dir,
            _database: database,
        }
    }
}

impl TestApp {
    pub fn with() -> Spawn {
        Spawn { vars: BTreeMap::new(), mode: Mode::Serve }
    }

    pub async fn spawn() -> TestApp {
        Self::with().start().await
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A tenant with a site (listing `domains`) and one installation.
    pub async fn fixture(&self, slug: &str, domains: &[&str]) -> Fixture {
        parley_storage::testing::fixture(&self.tenancy, slug, domains).await
    }

    /// Another site (with its installation) of an existing tenant.
    pub async fn site(&self, slug: &str, tenant: parley_domain::model::TenantId, domains: &[&str]) -> Fixture {
        parley_storage::testing::site(&self.tenancy, slug, tenant, domains).await
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(Method::GET, path, None, &[]).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(Method::POST, path, Some(body), &[]).await
    }

    pub async fn send(&self, method: Method, path: &str, body: Option<Value>, headers: &[(&str, &str)]) -> (StatusCode, Value) {
        let mut req = self.client.request(method, self.url(path)).header("accept", "application/json");
        if let Some(body) = body {
            req = req.json(&body);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let res = req.send().await.expect("request");
        let status = res.status();
        let text = res.text().await.expect("body");
        let value = if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
        (status, value)
    }

    /// Opens a conversation for `visitor` and returns its `public_id`.
    pub async fn open_conversation(&self, prefix: &str, token: &str, visitor: &str, message: &str) -> String {
        let (status, body) = self
            .post(
                &format!("{prefix}/widget/conversations"),
                json!({"token": token, "visitor_uuid": visitor, "message": message, "privacy_accepted": true}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["conversation"]["public_id"].as_str().expect("public_id").to_owned()
    }

    pub async fn post_message(&self, prefix: &str, token: &str, public_id: &str, text: &str) -> (StatusCode, Value) {
        self.post(&format!("{prefix}/widget/conversations/{public_id}/messages"), json!({"token": token, "body": text})).await
    }

    /// Creates an operator directly in the domain; returns its id.
    pub async fn operator(&self, f: &Fixture, email: &str, role: Role, sites: &[SiteId]) -> i64 {
        let op = self
            .tenancy
            .create_operator(
                f.scope.tenant,
                parley_domain::tenancy::NewOperatorInput {
                    email: email.into(),
                    name: email.split('@').next().unwrap_or("op").into(),
                    password: PASSWORD.into(),
                    role,
                    site_ids: sites.to_vec(),
                },
                None,
            )
            .await
            .expect("operator");
        op.id.0
    }

    /// Logs in with the shared test password and returns the bearer token.
    pub async fn login(&self, email: &str) -> String {
        let (status, body) = self.post("/api/v1/mobile/login", json!({"email": email, "password": PASSWORD})).await;
        assert_eq!(status, StatusCode::OK, "login {email}: {body}");
        body["token"].as_str().expect("token").to_owned()
    }

    /// A request with a bearer token.
    pub async fn authed(&self, method: Method, path: &str, token: &str, body: Option<Value>) -> (StatusCode, Value) {
        let auth = format!("Bearer {token}");
        self.send(method, path, body, &[("authorization", auth.as_str())]).await
    }

    /// Transfers conversation `id` to `operator_id` with an operator-only
    /// note, as `token`'s operator; the transfer must succeed.
    pub async fn transfer_with_note(&self, token: &str, id: i64, operator_id: Value, note: &str) {
        let path = format!("/api/mobile/conversations/{id}/transfer");
        let (status, body) = self.authed(Method::POST, &path, token, Some(json!({"operator_id": operator_id, "note": note}))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    /// The kinds of the webhook events recorded for a tenant, oldest first.
    pub async fn events(&self, slug: &str) -> Vec<String> {
        let slug = slug.to_owned();
        self.db
            .read(move |r| {
                let tenant = r.tenant_by_slug(&slug)?.ok_or(parley_domain::DomainError::NotFound)?;
                Ok(r.recent_events(tenant.id, 10_000)?.into_iter().map(|e| e.kind.as_str().to_owned()).collect())
            })
            .await
            .expect("events")
    }

    /// What a visitor's sealed cursor of the conversation `public_id`
    /// names, opened with the installation's own key (read from the
    /// database as another instance would): `None` when it does not open.
    pub async fn open_visitor_cursor(&self, f: &Fixture, public_id: &str, text: &str) -> Option<parley_domain::feed::Cursor> {
        let clock: Arc<dyn parley_domain::Clock> = self.clock.clone();
        let keys = parley_domain::keys::ServerKeys::load(&self.db, &clock).await.expect("the installation's keys");
        let seal = parley_domain::feed::CursorSeal::new(*keys.key(parley_domain::keys::Purpose::VisitorCursor));
        let (scope, public_id) = (f.scope, public_id.to_owned());
        let conversation = self
            .db
            .read(move |r| r.conversation_by_public_id(scope.into(), &public_id)?.ok_or(parley_domain::DomainError::NotFound))
            .await
            .expect("the conversation");
        seal.open(conversation.id, text)
    }

    /// Stops the server the way SIGTERM does and waits for it.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        if let Some(server) = self.server.take() {
            server.await.expect("server task").expect("server result");
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Asserts a JSON error body with `code`, and for validation errors that
/// exactly `fields` are named.
pub fn assert_error(status: StatusCode, body: &Value, expected: StatusCode, code: &str) {
    assert_eq!(status, expected, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
}

pub fn assert_fields(status: StatusCode, body: &Value, fields: &[&str]) {
    assert_error(status, body, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    let named: Vec<&str> = body["error"]["fields"].as_object().expect("fields map").keys().map(String::as_str).collect();
    let mut expected = fields.to_vec();
    expected.sort_unstable();
    assert_eq!(named, expected, "{body}");
}

/// A plain HTTP client for tests (the workspace builds reqwest without a
/// default TLS provider, so one is installed first).
pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// The token the tests that scrape `/metrics` on the main address set.
pub const METRICS_TOKEN: &str = "metrics-token-0123456789";

/// `/metrics` of the app at `base` (the main address or the metrics one).
pub async fn scrape_metrics_at(app: &TestApp, base: &str) -> String {
    let res = app.client.get(format!("{base}/metrics")).bearer_auth(METRICS_TOKEN).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()["content-type"].to_str().unwrap().contains("text"));
    res.text().await.unwrap()
}

/// `/metrics` of the app, started with `PARLEY_METRICS_TOKEN` = [`METRICS_TOKEN`].
pub async fn scrape_metrics(app: &TestApp) -> String {
    scrape_metrics_at(app, &app.url("")).await
}

/// The value of the unlabelled-by-the-test series `name` in a scrape.
pub fn gauge(metrics: &str, name: &str) -> f64 {
    let line = metrics.lines().find(|l| l.starts_with(&format!("{name}{{"))).unwrap_or_else(|| panic!("no {name} in {metrics}"));
    line.rsplit(' ').next().and_then(|v| v.parse().ok()).expect("a number")
}

/// Polls `check` until it returns `Some`, for at most 10 seconds: waiting
/// for the background worker to reach a state, never for a fixed time.
pub async fn eventually<T, F, Fut>(mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "condition not reached within 10 s");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// An event with nothing in it but its id, for the storage tests.
pub fn event(id: &str) -> parley_domain::events::OutboxEvent {
    parley_domain::events::OutboxEvent {
        event_id: id.into(),
        kind: parley_domain::events::EventKind::ConversationClosed,
        occurred_at: START,
        payload: "{}".into(),
    }
}

/// How a token ends: its own logout, or an admin's request (a new
/// password, disabling its operator, revoking it).
pub enum Ending {
    Logout,
    ByAdmin(Method, String, Value),
}

/// An operator's token for each way a token can end, with that way, and
/// the admin's own token.
pub async fn ending_tokens(app: &TestApp, f: &Fixture) -> (String, Vec<(String, Ending)>) {
    let admin = app.login("admin@acme.example.com").await;
    for op in ["ops1", "ops2", "ops3"] {
        app.operator(f, &format!("{op}@acme.example.com"), Role::Admin, &[]).await;
    }
    let (_, list) = app.authed(Method::GET, "/api/admin/operators", &admin, None).await;
    let id = |email: &str| list["operators"].as_array().unwrap().iter().find(|o| o["email"] == email).unwrap()["id"].as_i64().unwrap();
    let (ops2, ops3) = (id("ops2@acme.example.com"), id("ops3@acme.example.com"));
    let (_, personal) = app.authed(Method::POST, "/api/admin/tokens", &admin, Some(json!({"name": "poll", "expires_in_days": 1}))).await;
    let personal_id = personal["token"]["id"].as_i64().unwrap();
    let ways = vec![
        (app.login("ops1@acme.example.com").await, Ending::Logout),
        (
            app.login("ops2@acme.example.com").await,
            Ending::ByAdmin(Method::PATCH, format!("/api/admin/operators/{ops2}"), json!({"password": "another long password"})),
        ),
        (
            app.login("ops3@acme.example.com").await,
            Ending::ByAdmin(Method::PATCH, format!("/api/admin/operators/{ops3}"), json!({"active": false})),
        ),
        (
            personal["token"]["access_token"].as_str().unwrap().to_owned(),
            Ending::ByAdmin(Method::DELETE, format!("/api/admin/tokens/{personal_id}"), Value::Null),
        ),
    ];
    (admin, ways)
}

/// Ends `token` the way `ending` says.
pub async fn end_token(app: &TestApp, admin: &str, token: &str, ending: &Ending) {
    let (status, body) = match ending {
        Ending::Logout => app.authed(Method::POST, "/api/mobile/logout", token, None).await,
        Ending::ByAdmin(method, path, body) => app.authed(method.clone(), path, admin, (!body.is_null()).then(|| body.clone())).await,
    };
    assert!(status.is_success(), "{status} {body}");
}
