//! Registering webhook endpoints and reading their delivery log: the
//! tenant admin's side of webhooks.

use serde_json::json;

use crate::audit::{self, Action, Actor};
use std::sync::Arc;

use super::{Delivery, NewWebhook, ROTATION_OVERLAP, Webhook, sample, signing, target};
use crate::admin::require_admin;
use crate::clock::Clock;
use crate::error::DomainError;
use crate::events::EventKind;
use crate::feed::FeedEntry;
use crate::inbox::{PageMeta, PageRequest};
use crate::model::{DeliveryId, Session, TenantId, WebhookId};
use crate::store::{Database, WriteTx};

pub struct NewWebhookInput {
    pub url: String,
    /// `None`: every kind.
    pub events: Option<Vec<EventKind>>,
}

#[derive(Clone)]
pub struct WebhookService {
    db: Database,
    clock: Arc<dyn Clock>,
    /// `PARLEY_WEBHOOK_ALLOW_PRIVATE`: endpoints on this network are allowed.
    allow_private: bool,
    /// `PARLEY_WEBHOOK_ENDPOINTS_PER_TENANT`: every endpoint costs delivery
    /// work on each event, so a tenant may have only so many.
    max_endpoints: usize,
}

impl WebhookService {
    pub fn new(db: Database, clock: Arc<dyn Clock>, allow_private: bool, max_endpoints: usize) -> Self {
        Self { db, clock, allow_private, max_endpoints }
    }

    /// Registers an endpoint; the returned webhook carries its secret, shown this once.
    pub async fn create(&self, session: &Session, input: NewWebhookInput) -> Result<Webhook, DomainError> {
        let tenant = require_admin(session)?;
        let url = target::check_url(&input.url, self.allow_private).await.map_err(|m| DomainError::invalid("url", m))?;
        let new = NewWebhook { url: url.into(), events: input.events, secret: signing::new_secret()?, created_at: self.clock.now() };
        let (max, by) = (self.max_endpoints, Actor::of(session));
        self.db
            .write(move |tx| {
                // Counted inside the write, so parallel creations cannot
                // both slip under the bound.
                let existing = tx.webhooks(tenant)?;
                // The same URL for the same events would get each event
                // twice; a form sent twice (a double click) makes one.
                if existing.iter().any(|w| w.enabled && w.url == new.url && same_kinds(&w.events, &new.events)) {
                    return Err(DomainError::Conflict(
                        "this URL already has an endpoint for these events: use that one, or delete it first",
                    ));
                }
                if existing.len() >= max {
                    let message = format!("this tenant already has the most endpoints allowed ({max}); delete one first");
                    return Err(DomainError::invalid("url", message));
                }
                let made = tx.insert_webhook(tenant, &new)?;
                let events = made.events.as_ref().map(|kinds| kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>());
                let details = json!({"url": logged_url(&made.url), "events": events});
                audit::record(tx, tenant, &by, new.created_at, Action::WebhookCreated, Some(made.id.0), details)?;
                Ok(made)
            })
            .await
    }

    pub async fn list(&self, session: &Session) -> Result<Vec<Webhook>, DomainError> {
        let tenant = require_admin(session)?;
        self.db.read(move |r| Ok(r.webhooks(tenant)?)).await
    }

    pub async fn get(&self, session: &Session, id: WebhookId) -> Result<Webhook, DomainError> {
        let tenant = require_admin(session)?;
        self.db.read(move |r| r.webhook(tenant, id)?.ok_or(DomainError::NotFound)).await
    }

    pub async fn delete(&self, session: &Session, id: WebhookId) -> Result<(), DomainError> {
        let tenant = require_admin(session)?;
        let (by, now) = (Actor::of(session), self.clock.now());
        let deleted = self
            .db
            .write(move |tx| {
                let url = tx.webhook(tenant, id)?.map(|w| logged_url(&w.url));
                let deleted = tx.delete_webhook(tenant, id)?;
                if deleted {
                    audit::record(tx, tenant, &by, now, Action::WebhookDeleted, Some(id.0), json!({"url": url}))?;
                }
                Ok(deleted)
            })
            .await?;
        if deleted { Ok(()) } else { Err(DomainError::NotFound) }
    }

    /// Replaces the secret; the old one keeps signing for 24 hours so the
    /// partner can switch without losing a delivery.
    pub async fn rotate_secret(&self, session: &Session, id: WebhookId) -> Result<Webhook, DomainError> {
        self.rotate(session, id, None).await
    }

    /// As `rotate_secret`, only if the endpoint's secret is still the one
    /// a page showed (`shown`, its `signing::fingerprint`): the same form
    /// sent again (a reload of its answer, a double click) would otherwise
    /// end at once the secret the partner still uses, which a rotation
    /// keeps for a day.
    pub async fn rotate_secret_shown(&self, session: &Session, id: WebhookId, shown: String) -> Result<Webhook, DomainError> {
        self.rotate(session, id, Some(shown)).await
    }

    async fn rotate(&self, session: &Session, id: WebhookId, shown: Option<String>) -> Result<Webhook, DomainError> {
        let tenant = require_admin(session)?;
        let secret = signing::new_secret()?;
        let (by, now) = (Actor::of(session), self.clock.now());
        let until = now.plus(ROTATION_OVERLAP);
        self.db
            .write(move |tx| {
                let current = tx.webhook(tenant, id)?.ok_or(DomainError::NotFound)?;
                if shown.is_some_and(|shown| shown != signing::fingerprint(&current.secret)) {
                    return Err(DomainError::Conflict("the secret was already replaced since this page was shown"));
                }
                tx.rotate_webhook_secret(tenant, id, &secret, until)?;
                audit::record(tx, tenant, &by, now, Action::WebhookSecretRotated, Some(id.0), json!({}))?;
                tx.webhook(tenant, id)?.ok_or(DomainError::NotFound)
            })
            .await
    }

    pub async fn deliveries(&self, session: &Session, id: WebhookId, page: PageRequest) -> Result<(Vec<Delivery>, PageMeta), DomainError> {
        let tenant = require_admin(session)?;
        // Counting an endpoint's deliveries costs their number.
        self.db
            .read_long(move |r| {
                r.webhook(tenant, id)?.ok_or(DomainError::NotFound)?;
                let total = r.count_deliveries(tenant, id)?;
                let offset = u64::from(page.page - 1) * u64::from(page.per_page);
                Ok((r.deliveries(tenant, id, offset, page.per_page)?, PageMeta::new(page, total)))
            })
            .await
    }

    /// Queues the delivery's event again for the same endpoint, due now.
    pub async fn redeliver(&self, session: &Session, id: WebhookId, delivery: DeliveryId) -> Result<Delivery, DomainError> {
        let tenant = require_admin(session)?;
        let (by, now) = (Actor::of(session), self.clock.now());
        self.db
            .write(move |tx| {
                enabled_endpoint(tx, tenant, id)?;
                let new_id = tx.redeliver(tenant, id, delivery, now)?.ok_or(DomainError::NotFound)?;
                let details = json!({"webhook_id": id.0, "delivery_id": delivery.0});
                audit::record(tx, tenant, &by, now, Action::WebhookRedelivered, Some(new_id.0), details)?;
                tx.delivery(tenant, id, new_id)?.ok_or(DomainError::NotFound)
            })
            .await
    }

    /// Sends a test event of `kind` to this endpoint alone: an ordinary
    /// signed delivery, in its log like any other, whose envelope says
    /// `"test": true`. It is kept in the feed so the worker can send it,
    /// but about no conversation and for no webhook fan-out, so no stream
    /// and no other endpoint sees it.
    pub async fn send_test(&self, session: &Session, id: WebhookId, kind: EventKind) -> Result<Delivery, DomainError> {
        let tenant = require_admin(session)?;
        let (by, now) = (Actor::of(session), self.clock.now());
        self.db
            .write(move |tx| {
                enabled_endpoint(tx, tenant, id)?;
                // One at a time: tests wait in the endpoint's queue beside
                // real events, and each is kept and retried like one.
                if tx.pending_test(tenant, id)? {
                    return Err(DomainError::Conflict("a test event to this endpoint is still waiting to be sent; see the delivery log"));
                }
                let owner = tx.tenant(tenant)?.ok_or(DomainError::NotFound)?;
                let event = sample::test_event(&owner, kind, now)?;
                let entry = FeedEntry { webhook: false, ..FeedEntry::webhook_only(event) };
                tx.append_event(tenant, &entry)?;
                let new_id = tx.deliver_to(tenant, id, &entry.event.event_id, now)?.ok_or(DomainError::NotFound)?;
                let details = json!({"webhook_id": id.0, "event": kind.as_str()});
                audit::record(tx, tenant, &by, now, Action::WebhookTested, Some(new_id.0), details)?;
                tx.delivery(tenant, id, new_id)?.ok_or(DomainError::NotFound)
            })
            .await
    }
}

/// What the audit log keeps of an endpoint's URL: without credentials or
/// query, which often carry a partner's token, and which the log would
/// keep after the endpoint is gone.
fn logged_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => String::new(),
    }
}

/// The endpoint, if it may be sent to: a disabled one (it answered 410)
/// gets nothing until it is registered again.
fn enabled_endpoint(tx: &mut dyn WriteTx, tenant: TenantId, id: WebhookId) -> Result<Webhook, DomainError> {
    let webhook = tx.webhook(tenant, id)?.ok_or(DomainError::NotFound)?;
    if !webhook.enabled {
        return Err(DomainError::Conflict("the endpoint is disabled"));
    }
    Ok(webhook)
}

/// Whether two subscriptions name the same kinds, in any order.
fn same_kinds(a: &Option<Vec<EventKind>>, b: &Option<Vec<EventKind>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.iter().all(|k| b.contains(k)) && b.iter().all(|k| a.contains(k)),
        _ => false,
    }
}
