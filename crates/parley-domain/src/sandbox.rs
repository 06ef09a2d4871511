//! The sandbox tenant that `parley demo` runs with.
//!
//! Seeding is idempotent: a second start finds the tenant and reuses its
//! site and installation, so the demo widget token stays the same across
//! restarts. A fresh mobile token is issued on every start, because only
//! token digests are stored.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::store::Database;
use crate::webhooks::{Delivery, NewWebhook, signing};

use crate::error::DomainError;
use crate::model::*;
use crate::tenancy::{NewOperatorInput, NewSiteInput, NewTenantInput, Tenancy};

pub const SANDBOX_SLUG: &str = "sandbox";

/// Demo logins. They guard demo data only, which is why they may be fixed.
pub const DEMO_OPERATORS: [(&str, &str, Role); 2] = [
    ("admin@sandbox.parley.test", "sandbox-admin-password", Role::Admin),
    ("agent@sandbox.parley.test", "sandbox-agent-password", Role::Agent),
];

#[derive(Clone, Debug)]
pub struct DemoCredentials {
    pub tenant: TenantId,
    pub widget_token: String,
    /// Bearer token of the demo admin.
    pub mobile_token: String,
    pub operators: Vec<(String, String, Role)>,
}

pub async fn seed(tenancy: &Tenancy, mobile_token_ttl: Duration) -> Result<DemoCredentials, DomainError> {
    let db = tenancy.database();
    let existing = db.read(|r| Ok(r.tenant_by_slug(SANDBOX_SLUG)?)).await?;
    let tenant = match existing {
        Some(t) => t,
        None => create(tenancy).await?,
    };
    let tenant_id = tenant.id;
    let (widget_token, admin) = db
        .read(move |r| {
            let site = r.sites(tenant_id)?.into_iter().next().ok_or(DomainError::NotFound)?;
            let scope = SiteScope { tenant: tenant_id, site: site.id };
            let installation = r.installations(scope)?.into_iter().next().ok_or(DomainError::NotFound)?;
            let admin = r.operator_by_email(tenant_id, DEMO_OPERATORS[0].0)?.ok_or(DomainError::NotFound)?;
            Ok((installation.token, admin))
        })
        .await?;
    let mobile_token = tenancy.issue_operator_token(&admin, Some("sandbox".into()), mobile_token_ttl).await?;
    Ok(DemoCredentials {
        tenant: tenant_id,
        widget_token,
        mobile_token,
        operators: DEMO_OPERATORS.iter().map(|(e, p, r)| (e.to_string(), p.to_string(), *r)).collect(),
    })
}

async fn create(tenancy: &Tenancy) -> Result<Tenant, DomainError> {
    let (admin_email, admin_password, _) = DEMO_OPERATORS[0];
    let (tenant, _) = tenancy
        .create_tenant(NewTenantInput {
            slug: SANDBOX_SLUG.into(),
            name: "Parley Sandbox".into(),
            admin_email: admin_email.into(),
            admin_password: admin_password.into(),
        })
        .await?;
    let site = tenancy
        .create_site(
            tenant.id,
            NewSiteInput {
                name: "Sandbox site".into(),
                domains: vec!["localhost".into(), "127.0.0.1".into()],
                appearance: WidgetAppearance {
                    title: "Chat with us".into(),
                    greeting: "Hello! Ask us anything, we usually answer within minutes.".into(),
                    accent_color: "#2563eb".into(),
                    privacy_text: "We store your messages to answer you. This is a sandbox: nothing here is real.".into(),
                    privacy_url: None,
                },
            },
            None,
        )
        .await?;
    let scope = SiteScope { tenant: tenant.id, site: site.id };
    tenancy.create_installation(scope, "Sandbox page".into(), "web".into(), None).await?;
    let (agent_email, agent_password, _) = DEMO_OPERATORS[1];
    tenancy
        .create_operator(
            tenant.id,
            NewOperatorInput {
                email: agent_email.into(),
                name: "Sandbox Agent".into(),
                password: agent_password.into(),
                role: Role::Agent,
                site_ids: vec![site.id],
            },
            None,
        )
        .await?;
    Ok(tenant)
}

/// The path of the demo's own webhook receiver.
pub const RECEIVER_PATH: &str = "/sandbox/webhook-receiver";

/// Registers the demo's own receiver (`{base}/sandbox/webhook-receiver`)
/// for every event kind, replacing the one of an earlier start (whose
/// address may have changed).
pub async fn register_receiver(db: &Database, clock: &Arc<dyn Clock>, tenant: TenantId, base: &str) -> Result<WebhookId, DomainError> {
    let new = NewWebhook { url: format!("{base}{RECEIVER_PATH}"), events: None, secret: signing::new_secret()?, created_at: clock.now() };
    db.write(move |tx| {
        for old in tx.webhooks(tenant)?.into_iter().filter(|w| w.url.ends_with(RECEIVER_PATH)) {
            tx.delete_webhook(tenant, old.id)?;
        }
        Ok(tx.insert_webhook(tenant, &new)?.id)
    })
    .await
}

/// What the sandbox page reads at request time.
#[derive(Clone)]
pub struct SandboxService {
    db: Database,
    tenant: TenantId,
    receiver: WebhookId,
}

impl SandboxService {
    pub fn new(db: Database, tenant: TenantId, receiver: WebhookId) -> Self {
        Self { db, tenant, receiver }
    }

    /// The latest deliveries to the demo's own receiver.
    pub async fn deliveries(&self) -> Result<Vec<Delivery>, DomainError> {
        let (tenant, receiver) = (self.tenant, self.receiver);
        self.db.read(move |r| Ok(r.deliveries(tenant, receiver, 0, 20)?)).await
    }

    /// The emails and SMS the demo kept instead of sending, newest first.
    pub async fn outbox(&self) -> Result<Vec<crate::store::OutboxMessage>, DomainError> {
        let tenant = self.tenant;
        self.db.read(move |r| Ok(r.sandbox_outbox(tenant, 50)?)).await
    }
}
