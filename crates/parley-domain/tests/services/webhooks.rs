//! `WebhookService`: where endpoints may point, how many a tenant may
//! have, that each tenant sees its own only, and the signing secret.

use parley_domain::DomainError;
use parley_domain::events::EventKind;
use parley_domain::inbox::PageRequest;
use parley_domain::model::DeliveryId;
use parley_domain::webhooks::service::{NewWebhookInput, WebhookService};
use parley_domain::webhooks::signing;

use crate::harness::{Services, Settings, assert_refused, invalid_field};

/// A public address: no DNS needed, and outside every private range.
const PUBLIC: &str = "https://93.184.216.34/parley";

fn hook(url: &str) -> NewWebhookInput {
    NewWebhookInput { url: url.into(), events: None }
}

#[tokio::test]
async fn a_private_or_loopback_url_is_refused_unless_private_targets_are_allowed() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let admin = &acme.admin.session;
    for url in [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://api.localhost/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://metadata.google.internal/",
    ] {
        match h.webhooks.create(admin, hook(url)).await {
            Err(DomainError::Validation(f)) => assert_eq!(
                f.fields()["url"],
                vec!["must not point to a loopback, private, link-local or metadata address".to_owned()],
                "{url}"
            ),
            Err(e) => panic!("{url}: expected a validation error, got {e:?}"),
            Ok(w) => panic!("{url} was registered: {w:?}"),
        }
    }
    for url in ["ftp://93.184.216.34/x", "not a url"] {
        assert_refused!(h.webhooks.create(admin, hook(url)).await, e if invalid_field(&e, "url"));
    }
    assert!(h.webhooks.list(admin).await.unwrap().is_empty(), "nothing was registered");
    let public = h.webhooks.create(admin, hook(PUBLIC)).await.expect("a public address is allowed");
    assert_eq!(public.url, PUBLIC);

    // With PARLEY_WEBHOOK_ALLOW_PRIVATE, as in the demo.
    let allowing = WebhookService::new(h.db.clone(), h.clock.clone(), true, 10);
    let local = allowing.create(admin, hook("http://127.0.0.1:8080/hook")).await.expect("private targets allowed");
    assert_eq!(local.url, "http://127.0.0.1:8080/hook");
    // The form is still checked.
    assert_refused!(allowing.create(admin, hook("ftp://127.0.0.1/x")).await, e if invalid_field(&e, "url"));
    assert_eq!(h.webhooks.list(admin).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_tenant_has_at_most_the_configured_number_of_endpoints() {
    let h = Services::with(Settings { max_endpoints: 3, ..Settings::default() }).await;
    let acme = h.tenant("acme").await;
    let globex = h.tenant("globex").await;
    let admin = &acme.admin.session;
    let max = h.settings.max_endpoints;
    let mut made = Vec::new();
    for n in 0..max {
        made.push(h.webhooks.create(admin, hook(&format!("{PUBLIC}/{n}"))).await.expect("under the bound"));
    }
    match h.webhooks.create(admin, hook(&format!("{PUBLIC}/more"))).await {
        Err(DomainError::Validation(f)) => {
            assert_eq!(f.fields()["url"], vec![format!("this tenant already has the most endpoints allowed ({max}); delete one first")])
        }
        Err(e) => panic!("expected a validation error, got {e:?}"),
        Ok(w) => panic!("one endpoint too many was registered: {w:?}"),
    }
    assert_eq!(h.webhooks.list(admin).await.unwrap().len(), max);

    // The bound is per tenant.
    h.webhooks.create(&globex.admin.session, hook(PUBLIC)).await.expect("another tenant has its own allowance");
    // Deleting one makes room for one.
    h.webhooks.delete(admin, made[0].id).await.unwrap();
    h.webhooks.create(admin, hook(&format!("{PUBLIC}/more"))).await.expect("room again");
    assert_refused!(h.webhooks.create(admin, hook(&format!("{PUBLIC}/again"))).await, e if invalid_field(&e, "url"));
}

#[tokio::test]
async fn another_tenant_cannot_read_delete_or_rotate_an_endpoint() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let globex = h.tenant("globex").await;
    let (a, g) = (&acme.admin.session, &globex.admin.session);
    let endpoint = h.webhooks.create(a, hook(PUBLIC)).await.unwrap();
    let page = PageRequest { page: 1, per_page: 20 };

    assert!(h.webhooks.list(g).await.unwrap().is_empty());
    assert_refused!(h.webhooks.get(g, endpoint.id).await, DomainError::NotFound);
    assert_refused!(h.webhooks.delete(g, endpoint.id).await, DomainError::NotFound);
    assert_refused!(h.webhooks.rotate_secret(g, endpoint.id).await, DomainError::NotFound);
    let shown = signing::fingerprint(&endpoint.secret);
    assert_refused!(h.webhooks.rotate_secret_shown(g, endpoint.id, shown).await, DomainError::NotFound);
    assert_refused!(h.webhooks.deliveries(g, endpoint.id, page).await, DomainError::NotFound);
    assert_refused!(h.webhooks.send_test(g, endpoint.id, EventKind::MessageCreated).await, DomainError::NotFound);
    assert_refused!(h.webhooks.redeliver(g, endpoint.id, DeliveryId(1)).await, DomainError::NotFound);

    // The owner's endpoint is untouched: same secret, nothing queued.
    let found = h.webhooks.get(a, endpoint.id).await.expect("still there");
    assert_eq!(found.secret, endpoint.secret);
    assert_eq!(found.previous_secret, None);
    let (deliveries, meta) = h.webhooks.deliveries(a, endpoint.id, page).await.unwrap();
    assert!(deliveries.is_empty());
    assert_eq!(meta.total, 0);

    // An agent of the owner's own tenant is refused too, as for all admin work.
    assert_refused!(h.webhooks.list(&acme.agent.session).await, DomainError::Forbidden(_));
    assert_refused!(h.webhooks.get(&acme.agent.session, endpoint.id).await, DomainError::Forbidden(_));
    assert_refused!(h.webhooks.create(&acme.agent.session, hook(PUBLIC)).await, DomainError::Forbidden(_));
}

#[tokio::test]
async fn the_secret_comes_with_the_creation_and_a_rotation_replaces_it() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let admin = &acme.admin.session;
    let created = h.webhooks.create(admin, hook(PUBLIC)).await.unwrap();
    assert!(created.secret.starts_with("whsec_"), "{}", created.secret);
    assert!(created.secret.len() > 40, "a 256-bit secret");
    assert_eq!(created.signing_secrets(h.now()), vec![created.secret.as_str()]);
    let other =
        h.webhooks.create(admin, NewWebhookInput { url: PUBLIC.into(), events: Some(vec![EventKind::MessageCreated]) }).await.unwrap();
    assert_ne!(other.secret, created.secret, "each endpoint has its own");
    // The same URL for the same events once more would double every event.
    assert_refused!(h.webhooks.create(admin, hook(PUBLIC)).await, DomainError::Conflict(_));

    // A rotation shows the new secret; the old one signs beside it for a day.
    let shown = signing::fingerprint(&created.secret);
    let rotated = h.webhooks.rotate_secret_shown(admin, created.id, shown.clone()).await.unwrap();
    assert_ne!(rotated.secret, created.secret);
    assert_eq!(rotated.previous_secret.as_deref(), Some(created.secret.as_str()));
    assert_eq!(rotated.signing_secrets(h.now()), vec![rotated.secret.as_str(), created.secret.as_str()]);
    // The same form sent again does not end the secret the partner still uses.
    assert_refused!(h.webhooks.rotate_secret_shown(admin, created.id, shown).await, DomainError::Conflict(_));
    let now = h.webhooks.get(admin, created.id).await.unwrap();
    assert_eq!(now.secret, rotated.secret);
    h.clock.advance(parley_domain::webhooks::ROTATION_OVERLAP);
    assert_eq!(now.signing_secrets(h.now()), vec![rotated.secret.as_str()], "the old one stops after a day");
}

#[tokio::test]
async fn a_deleted_endpoint_is_gone_for_its_tenant_too() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let admin = &acme.admin.session;
    let endpoint = h.webhooks.create(admin, hook(PUBLIC)).await.unwrap();
    h.webhooks.delete(admin, endpoint.id).await.unwrap();
    assert_refused!(h.webhooks.get(admin, endpoint.id).await, DomainError::NotFound);
    assert_refused!(h.webhooks.delete(admin, endpoint.id).await, DomainError::NotFound);
    assert_refused!(h.webhooks.rotate_secret(admin, endpoint.id).await, DomainError::NotFound);
}
