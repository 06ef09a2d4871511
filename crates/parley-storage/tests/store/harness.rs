//! `TestStore`: a fresh, migrated database of the backend under test, a
//! manual clock, and fixtures made through the domain's tenancy service.

use std::sync::Arc;

use parley_domain::model::SiteScope;
use parley_domain::tenancy::Tenancy;
use parley_domain::{Database, ManualClock};
use parley_storage::testing::TestDatabase;
pub use parley_storage::testing::{Fixture, START, backend, fresh_database, terminate_connections};
use tempfile::TempDir;

pub struct TestStore {
    pub db: Database,
    /// The clock the fixtures' services run on, for a test that moves
    /// time; the operations themselves take their times as arguments.
    #[allow(dead_code, reason = "no test here moves time yet")]
    pub clock: Arc<ManualClock>,
    pub tenancy: Tenancy,
    /// The database's URL, to open it again or from a second instance.
    pub url: String,
    _dir: TempDir,
    /// Dropped last: the PostgreSQL database, if the suite runs on one.
    _database: Option<TestDatabase>,
}

impl TestStore {
    pub async fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let (url, database) = fresh_database(dir.path(), "parley.sqlite3").await;
        let options = parley_storage::Options { pool: 4, ..Default::default() };
        let db = parley_storage::open(&url, options).await.expect("the database opens");
        let clock = ManualClock::new(START);
        let tenancy = Tenancy::new(db.clone(), clock.clone());
        Self { db, clock, tenancy, url, _dir: dir, _database: database }
    }

    /// A tenant with a site (listing `domains`) and one installation.
    pub async fn fixture(&self, slug: &str, domains: &[&str]) -> Fixture {
        parley_storage::testing::fixture(&self.tenancy, slug, domains).await
    }

    /// Another site (with its installation) of an existing tenant.
    pub async fn site(&self, slug: &str, tenant: parley_domain::model::TenantId, domains: &[&str]) -> Fixture {
        parley_storage::testing::site(&self.tenancy, slug, tenant, domains).await
    }
}

/// Waits (up to 10 s) until `check` gives a value.
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

/// An event for tests that only need one to exist.
pub fn event(id: &str) -> parley_domain::events::OutboxEvent {
    parley_domain::events::OutboxEvent {
        event_id: id.into(),
        kind: parley_domain::events::EventKind::ConversationClosed,
        occurred_at: START,
        payload: "{}".into(),
    }
}

/// A visitor of `site` (by `uuid`) and a conversation it opens with
/// `first`, written as the widget's service writes them.
pub fn open_conversation(
    tx: &mut dyn parley_domain::store::WriteTx,
    site: SiteScope,
    uuid: &str,
    first: &str,
) -> parley_domain::store::StoreResult<parley_domain::model::Conversation> {
    use parley_domain::model::{ConversationScope, NewConversation, NewVisitor};
    let installation = tx
        .installations(site)?
        .first()
        .map(|i| i.id)
        .ok_or_else(|| parley_domain::StoreError::Internal("the site has no installation".into()))?;
    let visitor = tx.insert_visitor(site, &NewVisitor { uuid: uuid.into(), profile: Default::default(), created_at: START })?;
    let conversation = tx.insert_conversation(
        site,
        &NewConversation {
            public_id: format!("conv_{uuid}"),
            installation_id: installation,
            visitor_id: visitor.id,
            subject: None,
            start_url: None,
            created_at: START,
        },
    )?;
    tx.insert_message(ConversationScope::from(site), &visitor_message(conversation.id, first), &[])?;
    Ok(conversation)
}

/// A message the visitor of `conversation` writes.
pub fn visitor_message(conversation: parley_domain::model::ConversationId, body: &str) -> parley_domain::model::NewMessage {
    use parley_domain::model::{NewMessage, Sender, SenderKind};
    NewMessage {
        conversation_id: conversation,
        sender: Sender { kind: SenderKind::Visitor, name: None, operator_id: None },
        body: body.into(),
        internal: false,
        created_at: START,
        client_message_id: None,
        attachment_ids: Vec::new(),
    }
}
