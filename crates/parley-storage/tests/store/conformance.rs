//! The storage conformance suite: the operations of `ReadTx`/`WriteTx`
//! driven directly on the backend the suite runs on (SQLite, and
//! PostgreSQL with `PARLEY_TEST_DATABASE_URL`), each with a scope that
//! should see a row and with the scopes that should not: another tenant,
//! another site of the same tenant, an agent who is not a member of the
//! site. A read outside its scope finds nothing; a write outside its scope
//! changes nothing. The HTTP isolation tests check the same rules from the
//! routes; these check them where they are enforced, operation by
//! operation, so a new backend or a rewritten statement cannot loosen one
//! unnoticed.

use std::time::Duration;

use parley_domain::DomainError;
use parley_domain::model::*;
use parley_domain::store::{MessagePage, OutboxMessage, StoreResult, WriteTx};
use parley_domain::verification::{ChallengeCount, ChallengeStatus, Method, NewChallenge};
use parley_domain::webhooks::NewWebhook;

use crate::harness::*;

/// One tenant's rows: two sites, an agent of the first, a visitor, a
/// conversation with a message on each site, a challenge, an endpoint with
/// a delivery, an outbox message.
#[derive(Clone)]
struct Side {
    tenant: TenantId,
    site1: SiteScope,
    site2: SiteScope,
    installation1: InstallationId,
    agent: OperatorId,
    agent_email: String,
    visitor: Visitor,
    conv1: Conversation,
    conv2: Conversation,
    challenge: ChallengeId,
    webhook: WebhookId,
    delivery: DeliveryId,
}

impl Side {
    fn admin(&self) -> ConversationScope {
        ConversationScope { tenant: self.tenant, site: None, operator: None }
    }

    fn agent(&self) -> ConversationScope {
        ConversationScope { tenant: self.tenant, site: None, operator: Some((self.agent, Role::Agent)) }
    }

    fn widget(&self, site: SiteScope) -> ConversationScope {
        site.into()
    }
}

async fn side(app: &TestStore, slug: &str) -> Side {
    let f = app.fixture(slug, &[]).await;
    let second = app.site(slug, f.scope.tenant, &[]).await;
    let (site1, site2) = (f.scope, second.scope);
    let slug = slug.to_owned();
    app.db
        .write(move |tx| {
            let tenant = site1.tenant;
            let installation1 = tx.installations(site1)?.first().map(|i| i.id).ok_or(DomainError::NotFound)?;
            let installation2 = tx.installations(site2)?.first().map(|i| i.id).ok_or(DomainError::NotFound)?;
            let agent_email = format!("agent@{slug}.example.com");
            let agent = tx.insert_operator(
                tenant,
                &NewOperator {
                    email: agent_email.clone(),
                    name: "Agent".into(),
                    password_hash: "not a hash".into(),
                    role: Role::Agent,
                    site_ids: vec![site1.site],
                    created_at: START,
                },
            )?;
            let visitor =
                tx.insert_visitor(site1, &NewVisitor { uuid: format!("{slug}-visitor"), profile: Default::default(), created_at: START })?;
            let visitor2 = tx
                .insert_visitor(site2, &NewVisitor { uuid: format!("{slug}-visitor-2"), profile: Default::default(), created_at: START })?;
            let conversation = |public_id: String, installation_id, visitor_id| NewConversation {
                public_id,
                installation_id,
                visitor_id,
                subject: None,
                start_url: None,
                created_at: START,
            };
            let conv1 = tx.insert_conversation(site1, &conversation(format!("conv_{slug}_1"), installation1, visitor.id))?;
            let conv2 = tx.insert_conversation(site2, &conversation(format!("conv_{slug}_2"), installation2, visitor2.id))?;
            for c in [&conv1, &conv2] {
                tx.insert_message(
                    ConversationScope { tenant, site: None, operator: None },
                    &NewMessage {
                        conversation_id: c.id,
                        sender: Sender { kind: SenderKind::Visitor, name: None, operator_id: None },
                        body: format!("hello from {slug}"),
                        internal: false,
                        created_at: START,
                        client_message_id: None,
                        attachment_ids: Vec::new(),
                    },
                    &[],
                )?;
            }
            let challenge = tx.insert_challenge(
                site1,
                &NewChallenge {
                    conversation_id: conv1.id,
                    visitor_id: visitor.id,
                    method: Method::EmailOtp,
                    target: format!("visitor@{slug}.example.com"),
                    code_salt: vec![1; 16],
                    code_hash: vec![2; 32],
                    created_at: START,
                    expires_at: START.plus(Duration::from_secs(600)),
                },
            )?;
            let webhook = tx.insert_webhook(
                tenant,
                &NewWebhook {
                    url: format!("https://hooks.{slug}.example.com/"),
                    events: None,
                    secret: format!("whsec_{slug}"),
                    created_at: START,
                },
            )?;
            tx.insert_event(tenant, &event(&format!("evt_{slug}")))?;
            tx.insert_outbox_message(
                tenant,
                &OutboxMessage {
                    channel: "email",
                    recipient: format!("visitor@{slug}.example.com"),
                    subject: None,
                    body: slug.clone(),
                    created_at: START,
                },
            )?;
            let delivery = tx.deliveries(tenant, webhook.id, 0, 10)?.first().map(|d| d.id).ok_or(DomainError::NotFound)?;
            Ok(Side {
                tenant,
                site1,
                site2,
                installation1,
                agent: agent.id,
                agent_email,
                visitor,
                conv1,
                conv2,
                challenge,
                webhook: webhook.id,
                delivery,
            })
        })
        .await
        .expect("seeded")
}

/// Two tenants, alike.
async fn world() -> (TestStore, Side, Side) {
    let app = TestStore::new().await;
    let a = side(&app, "acme").await;
    let b = side(&app, "globex").await;
    (app, a, b)
}

const PAGE: MessagePage = MessagePage { after_id: None, limit: 50, include_internal: true };

/// Every conversation read, in every scope: which of the four
/// conversations (two per tenant, one per site) each scope sees.
#[tokio::test]
async fn conversation_reads_see_their_scope_only() {
    let (app, a, b) = world().await;
    let cases = [
        ("tenant admin", a.admin(), vec![a.conv1.id, a.conv2.id]),
        ("agent of the first site", a.agent(), vec![a.conv1.id]),
        ("widget of the first site", a.widget(a.site1), vec![a.conv1.id]),
        ("widget of the second site", a.widget(a.site2), vec![a.conv2.id]),
    ];
    let all = [a.conv1.clone(), a.conv2.clone(), b.conv1.clone(), b.conv2.clone()];
    for (name, scope, visible) in cases {
        let (all, visible2) = (all.clone(), visible.clone());
        app.db
            .read(move |r| {
                for c in &all {
                    let sees = visible2.contains(&c.id);
                    assert_eq!(r.conversation(scope, c.id)?.is_some(), sees, "{name}: conversation {}", c.public_id);
                    assert_eq!(r.conversation_by_public_id(scope, &c.public_id)?.is_some(), sees, "{name}: by public id {}", c.public_id);
                    let with_visitor = r.conversation_and_visitor_by_public_id(scope, &c.public_id)?;
                    assert_eq!(with_visitor.is_some(), sees, "{name}: with its visitor {}", c.public_id);
                    if let Some((found, visitor)) = with_visitor {
                        assert_eq!(
                            (found.id, visitor.id, visitor.tenant_id, visitor.site_id),
                            (c.id, c.visitor_id, c.tenant_id, c.site_id),
                            "{name}: its own visitor"
                        );
                    }
                    assert_eq!(r.conversation_details(scope, c.id)?.is_some(), sees, "{name}: details {}", c.public_id);
                    assert_eq!(!r.messages(scope, c.id, PAGE)?.is_empty(), sees, "{name}: messages of {}", c.public_id);
                    assert_eq!(r.conversation_with_messages(scope, &c.public_id, PAGE)?.is_some(), sees, "{name}: poll {}", c.public_id);
                }
                let mut listed: Vec<ConversationId> =
                    r.conversations(scope, StatusFilter::All, 0, 100)?.into_iter().map(|d| d.conversation.id).collect();
                listed.sort();
                let mut expected = visible2.clone();
                expected.sort();
                assert_eq!(listed, expected, "{name}: the list");
                assert_eq!(r.count_conversations(scope, StatusFilter::All)?, expected.len() as u64, "{name}: the count");
                Ok(())
            })
            .await
            .unwrap();
    }
}

/// The locked reads a write unit makes (`FOR UPDATE` on PostgreSQL) keep
/// the same scope as the plain ones.
#[tokio::test]
async fn locked_conversation_reads_see_their_scope_only() {
    let (app, a, b) = world().await;
    let cases =
        [("agent of the first site", a.agent(), vec![a.conv1.id]), ("widget of the second site", a.widget(a.site2), vec![a.conv2.id])];
    for (name, scope, visible) in cases {
        let all = [a.conv1.clone(), a.conv2.clone(), b.conv1.clone(), b.conv2.clone()];
        app.db
            .write(move |tx| {
                for c in &all {
                    let sees = visible.contains(&c.id);
                    assert_eq!(tx.conversation_by_public_id(scope, &c.public_id)?.is_some(), sees, "{name}: {}", c.public_id);
                    let with_visitor = tx.conversation_and_visitor_by_public_id(scope, &c.public_id)?;
                    assert_eq!(with_visitor.map(|(_, v)| v.id), sees.then_some(c.visitor_id), "{name}: with its visitor {}", c.public_id);
                }
                Ok(())
            })
            .await
            .unwrap();
    }
}

/// Visitors are found by their site alone.
#[tokio::test]
async fn visitor_reads_see_their_site_only() {
    let (app, a, b) = world().await;
    app.db
        .read(move |r| {
            assert!(r.visitor(a.site1, a.visitor.id)?.is_some());
            assert!(r.visitor_by_uuid(a.site1, &a.visitor.uuid)?.is_some());
            for (scope, name) in [(a.site2, "another site"), (b.site1, "another tenant")] {
                assert!(r.visitor(scope, a.visitor.id)?.is_none(), "{name}");
                assert!(r.visitor_by_uuid(scope, &a.visitor.uuid)?.is_none(), "{name}");
            }
            Ok(())
        })
        .await
        .unwrap();
}

/// The tenant-scoped reads of every other aggregate find nothing of
/// another tenant.
#[tokio::test]
async fn tenant_reads_see_their_tenant_only() {
    let (app, a, b) = world().await;
    app.db
        .read(move |r| {
            let t = a.tenant;
            assert!(r.site(t, a.site1.site)?.is_some() && r.installation(t, a.installation1)?.is_some(), "own site and installation");
            assert!(r.operator(t, a.agent)?.is_some() && r.operator_by_email(t, &a.agent_email)?.is_some(), "own operator");
            assert!(r.webhook(t, a.webhook)?.is_some() && r.delivery(t, a.webhook, a.delivery)?.is_some(), "own endpoint and delivery");
            assert!(r.recent_events(t, 10)?.iter().any(|e| e.event_id == "evt_acme"), "own event");
            assert!(r.sandbox_outbox(t, 10)?.iter().any(|m| m.body == "acme"), "own outbox message");
            assert!(r.site(t, b.site1.site)?.is_none(), "site");
            let sites = r.sites(t)?;
            assert!(sites.len() == 2 && sites.iter().all(|s| s.tenant_id == t), "sites: its two, no other");
            assert!(r.installation(t, b.installation1)?.is_none(), "installation");
            assert!(r.installations(SiteScope { tenant: t, site: b.site1.site })?.is_empty(), "installations of another tenant's site");
            assert!(r.operator(t, b.agent)?.is_none(), "operator");
            assert!(r.operator_by_email(t, &b.agent_email)?.is_none(), "operator by email");
            let operators = r.operators(t)?;
            assert!(operators.iter().any(|o| o.id == a.agent) && operators.iter().all(|o| o.tenant_id == t), "operators");
            assert!(r.webhook(t, b.webhook)?.is_none(), "webhook");
            assert_eq!(r.webhooks(t)?.iter().map(|w| w.id).collect::<Vec<_>>(), [a.webhook], "webhooks");
            assert!(!r.deliveries(t, a.webhook, 0, 10)?.is_empty() && r.count_deliveries(t, a.webhook)? > 0, "own deliveries");
            assert!(r.deliveries(t, b.webhook, 0, 10)?.is_empty(), "deliveries");
            assert_eq!(r.count_deliveries(t, b.webhook)?, 0, "delivery count");
            assert!(r.delivery(t, b.webhook, b.delivery)?.is_none(), "delivery");
            assert!(r.delivery(t, a.webhook, b.delivery)?.is_none(), "another tenant's delivery under one's own endpoint");
            assert!(r.recent_events(t, 10)?.iter().all(|e| e.event_id != "evt_globex"), "events");
            assert!(r.sandbox_outbox(t, 10)?.iter().all(|m| m.body != "globex"), "outbox");
            assert!(r.challenge(a.site1, b.conv1.id, b.challenge)?.is_none(), "challenge of another tenant");
            assert!(r.challenge(b.site1, a.conv1.id, a.challenge)?.is_none(), "challenge seen from another tenant");
            assert!(r.challenge(a.site2, a.conv1.id, a.challenge)?.is_none(), "challenge seen from another site");
            assert!(r.challenge(a.site1, a.conv1.id, a.challenge)?.is_some(), "the challenge in scope");
            assert_eq!(
                r.challenge_times(t, &ChallengeCount::Tenant, START.minus(Duration::from_secs(1)), 10)?.len(),
                1,
                "challenge counts"
            );
            Ok(())
        })
        .await
        .unwrap();
}

/// Runs one write in a unit of its own and returns its answer, `None`
/// when it was refused. One write per unit: on PostgreSQL a refused
/// statement aborts the rest of its transaction, which would hide what a
/// later write in the same unit did.
async fn attempt<T: Send + 'static>(app: &TestStore, op: impl FnOnce(&mut dyn WriteTx) -> StoreResult<T> + Send + 'static) -> Option<T> {
    app.db.write(move |tx| Ok(op(tx).ok())).await.ok().flatten()
}

/// Writes outside their scope change nothing, whatever they answer.
#[tokio::test]
async fn writes_outside_their_scope_change_nothing() {
    let (app, a, b) = world().await;
    let mallory = VisitorProfile { name: Some("Mallory".into()), ..Default::default() };
    for (scope, visitor) in [(a.site1, b.visitor.id), (a.site2, a.visitor.id)] {
        let profile = mallory.clone();
        attempt(&app, move |tx| tx.update_visitor_profile(scope, visitor, &profile, START)).await;
    }
    for (scope, c) in [(a.admin(), b.conv1.clone()), (a.agent(), a.conv2.clone()), (a.widget(a.site1), a.conv2.clone())] {
        let mut closed = c.clone();
        closed.status = ConversationStatus::Closed;
        closed.closed_at = Some(START);
        assert!(attempt(&app, move |tx| tx.update_conversation(scope, &closed)).await.is_none(), "closing {} is refused", c.public_id);
        let m = NewMessage {
            conversation_id: c.id,
            sender: Sender { kind: SenderKind::System, name: None, operator_id: None },
            body: "intruder".into(),
            internal: false,
            created_at: START,
            client_message_id: None,
            attachment_ids: Vec::new(),
        };
        assert!(attempt(&app, move |tx| tx.insert_message(scope, &m, &[])).await.is_none(), "a message in {} is refused", c.public_id);
    }
    let (t, bi, bo, bw, bd, aw) = (a.tenant, b.installation1, b.agent, b.webhook, b.delivery, a.webhook);
    attempt(&app, move |tx| tx.set_installation_enabled(t, bi, false)).await;
    let site = a.site1;
    attempt(&app, move |tx| tx.set_heartbeat_status(site, bi, InstallationStatus::Stale)).await;
    attempt(&app, move |tx| {
        tx.update_operator(t, bo, &OperatorChanges { name: Some("Mallory".into()), active: Some(false), ..Default::default() })
    })
    .await;
    attempt(&app, move |tx| tx.revoke_operator_tokens(t, bo, START)).await;
    assert_ne!(attempt(&app, move |tx| tx.delete_webhook(t, bw)).await, Some(true), "another tenant's endpoint is not deleted");
    attempt(&app, move |tx| tx.rotate_webhook_secret(t, bw, "whsec_mallory", START)).await;
    assert!(attempt(&app, move |tx| tx.redeliver(t, bw, bd, START)).await.flatten().is_none(), "no redelivery");
    assert!(attempt(&app, move |tx| tx.redeliver(t, aw, bd, START)).await.flatten().is_none(), "no redelivery under one's own endpoint");
    assert!(attempt(&app, move |tx| tx.deliver_to(t, bw, "evt_acme", START)).await.flatten().is_none(), "no test to another's endpoint");
    assert!(attempt(&app, move |tx| tx.deliver_to(t, aw, "evt_globex", START)).await.flatten().is_none(), "no delivery of another's event");
    let pause = parley_domain::webhooks::fairness::Pause { until: START.plus(Duration::from_secs(3600)), pauses: 1 };
    attempt(&app, move |tx| tx.pause_endpoint(t, bw, pause)).await;
    for (scope, challenge) in [(a.site1, b.challenge), (a.site2, a.challenge)] {
        attempt(&app, move |tx| tx.update_challenge(scope, challenge, ChallengeStatus::Verified, 0, Some(START))).await;
    }
    for (scope, visitor, conv) in [(a.site1, b.visitor.id, b.conv1.id), (a.site2, a.visitor.id, a.conv1.id)] {
        attempt(&app, move |tx| tx.mark_verified(scope, visitor, conv, Method::EmailOtp, "mallory@example.com", START)).await;
    }
    let challenge = NewChallenge {
        conversation_id: b.conv1.id,
        visitor_id: b.visitor.id,
        method: Method::EmailOtp,
        target: "mallory@example.com".into(),
        code_salt: vec![0; 16],
        code_hash: vec![0; 32],
        created_at: START,
        expires_at: START.plus(Duration::from_secs(600)),
    };
    assert!(attempt(&app, move |tx| tx.insert_challenge(site, &challenge)).await.is_none(), "a challenge on another tenant's conversation");

    let (a, b) = (a.clone(), b.clone());
    app.db
        .read(move |r| {
            for (side, name) in [(&b, "the other tenant"), (&a, "the tenant's other site")] {
                let v = r.visitor(side.site1, side.visitor.id)?.expect("visitor");
                assert_eq!(v.profile.name, None, "{name}: visitor profile unchanged");
                assert!(v.verified_at.is_none(), "{name}: visitor not verified");
                let c = r.conversation(side.admin(), side.conv1.id)?.expect("conversation");
                assert_eq!(c.status, ConversationStatus::Unassigned, "{name}: conversation 1 unchanged");
                assert!(c.verified_at.is_none(), "{name}: conversation 1 not verified");
                let c = r.conversation(side.admin(), side.conv2.id)?.expect("conversation");
                assert_eq!(c.status, ConversationStatus::Unassigned, "{name}: conversation 2 unchanged");
                for conv in [side.conv1.id, side.conv2.id] {
                    let bodies: Vec<String> = r.messages(side.admin(), conv, PAGE)?.into_iter().map(|m| m.body).collect();
                    assert!(!bodies.iter().any(|b| b == "intruder"), "{name}: no message added");
                }
                let ch = r.challenge(side.site1, side.conv1.id, side.challenge)?.expect("challenge");
                assert_eq!(ch.status, ChallengeStatus::Active, "{name}: challenge unchanged");
            }
            let installation = r.installation(b.tenant, b.installation1)?.expect("installation");
            assert!(installation.enabled, "installation still enabled");
            assert_eq!(installation.heartbeat_status, InstallationStatus::Pending, "heartbeat status unchanged");
            let agent = r.operator(b.tenant, b.agent)?.expect("operator");
            assert!(agent.active && agent.name == "Agent", "operator unchanged");
            let webhook = r.webhook(b.tenant, b.webhook)?.expect("endpoint kept");
            assert_eq!(webhook.secret, "whsec_globex", "secret unchanged");
            assert!(webhook.paused_until.is_none(), "endpoint not paused");
            assert_eq!(r.count_deliveries(b.tenant, b.webhook)?, 1, "no delivery added");
            assert_eq!(
                r.challenge_times(b.tenant, &ChallengeCount::Tenant, START.minus(Duration::from_secs(1)), 10)?.len(),
                1,
                "no challenge added"
            );
            assert_eq!(
                r.challenge_times(a.tenant, &ChallengeCount::Tenant, START.minus(Duration::from_secs(1)), 10)?.len(),
                1,
                "nor one under the scope it was attempted in"
            );
            Ok(())
        })
        .await
        .unwrap();
}

/// Test messages count per tenant within the tenant, and per recipient
/// across tenants, newest first, within the window.
#[tokio::test]
async fn test_sends_count_per_tenant_and_per_recipient() {
    use parley_domain::verification::TestCount;
    use parley_domain::verification::channels::Channel;
    let (app, a, b) = world().await;
    let (ta, tb) = (a.tenant, b.tenant);
    let at = |s: u64| START.plus(Duration::from_secs(s));
    app.db
        .write(move |tx| {
            tx.insert_test_send(ta, Channel::Sms, "+14155550123", at(1))?;
            tx.insert_test_send(ta, Channel::Email, "ops@example.com", at(2))?;
            tx.insert_test_send(tb, Channel::Sms, "+14155550123", at(3))?;
            Ok::<_, DomainError>(())
        })
        .await
        .expect("recorded");
    let (tenant, recipient, recent) = app
        .db
        .read(move |r| {
            let tenant = r.test_send_times(ta, &TestCount::Tenant, START, 10)?;
            let recipient = r.test_send_times(ta, &TestCount::Recipient("+14155550123".into()), START, 10)?;
            let recent = r.test_send_times(ta, &TestCount::Tenant, at(1), 10)?;
            Ok::<_, DomainError>((tenant, recipient, recent))
        })
        .await
        .expect("read");
    assert_eq!(tenant, vec![at(2), at(1)], "the tenant's own, newest first");
    assert_eq!(recipient, vec![at(3), at(1)], "the number's, from any tenant");
    assert_eq!(recent, vec![at(2)], "only after `since`");
}

/// A visitor's head is the last entry of its own conversation that it
/// sees: not a later note or hand-over there, not another conversation's
/// entry, and nothing under another tenant's id.
#[tokio::test]
async fn a_visitors_feed_head_is_its_conversations_last_visible_entry() {
    use parley_domain::feed::{FeedEntry, Position};
    let (app, a, b) = world().await;
    let entry = |id: &str, c: &Conversation, widget: bool| FeedEntry {
        event: event(id),
        conversation: Some((c.id, c.site_id)),
        message: None,
        widget,
        webhook: false,
    };
    let (a2, b2) = (a.clone(), b.clone());
    app.db
        .write(move |tx| {
            tx.append_event(a2.tenant, &entry("seen", &a2.conv1, true))?;
            tx.append_event(a2.tenant, &entry("operators only", &a2.conv1, false))?;
            tx.append_event(a2.tenant, &entry("the other conversation", &a2.conv2, true))?;
            tx.append_event(b2.tenant, &entry("another tenant", &b2.conv1, true))?;
            Ok(())
        })
        .await
        .unwrap();
    let found = eventually(|| {
        let a = a.clone();
        let app = &app;
        async move {
            app.db
                .read(move |r| {
                    let seen = r.conversation_feed_after(a.admin(), a.conv1.id, Position::START, true, 100)?;
                    Ok(seen.last().map(|i| (i.position, i.occurred_at)).zip(r.visitor_feed_head(a.tenant, a.conv1.id)?))
                })
                .await
                .unwrap()
        }
    })
    .await;
    assert_eq!(Some(found.0), Some(found.1), "the last entry the visitor reads");
    let (a3, b3) = (a.clone(), b.clone());
    let crossed = app
        .db
        .read(move |r| Ok((r.visitor_feed_head(b3.tenant, a3.conv1.id)?, r.visitor_feed_head(a3.tenant, b3.conv1.id)?)))
        .await
        .unwrap();
    assert_eq!(crossed, (None, None), "another tenant's conversation has no head here");
}

/// The installation's secret is made once: instances starting at the
/// same time on a new database all keep the first one's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_key_is_kept_by_the_first_to_make_it() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _guard) = fresh_database(dir.path(), "keys.sqlite3").await;
    let options = || parley_storage::Options { pool: 2, ..Default::default() };
    let instances = [parley_storage::open(&url, options()).await.unwrap(), parley_storage::open(&url, options()).await.unwrap()];
    let clock: std::sync::Arc<dyn parley_domain::Clock> = parley_domain::ManualClock::new(START);
    let loads: Vec<_> = (0..8)
        .map(|n| {
            let (db, clock) = (instances[n % 2].clone(), clock.clone());
            tokio::spawn(async move { parley_domain::keys::ServerKeys::load(&db, &clock).await.unwrap() })
        })
        .collect();
    let mut keys = Vec::new();
    for load in loads {
        keys.push(*load.await.unwrap().key(parley_domain::keys::Purpose::VisitorCursor));
    }
    assert!(keys.windows(2).all(|w| w[0] == w[1]), "one secret for all");
    let app = TestStore::new().await;
    let kept = app
        .db
        .write(|tx| {
            tx.insert_server_key("test key", &[1; 32], START)?;
            tx.insert_server_key("test key", &[2; 32], START)?;
            Ok(tx.server_key("test key")?)
        })
        .await
        .unwrap();
    assert_eq!(kept, Some(vec![1; 32]));
    assert_eq!(app.db.read(|r| Ok(r.server_key("no such key")?)).await.unwrap(), None);
}

/// What a stream asks at every read: the token holds only as it was
/// given, for its own tenant, operator and role, until it ends.
#[tokio::test]
async fn a_token_holds_for_its_own_operator_until_it_ends() {
    let (app, a, b) = world().await;
    let digest = parley_domain::password::token_digest("a bearer token");
    let tenant = a.tenant;
    let (id, token) = {
        let digest = digest.clone();
        app.db
            .write(move |tx| {
                let admin = tx.operator_by_email(tenant, "admin@acme.example.com")?.expect("the admin");
                let token = tx.insert_operator_token(
                    tenant,
                    &NewOperatorToken {
                        operator_id: admin.id,
                        kind: TokenKind::Login,
                        token_hash: digest,
                        device_name: None,
                        created_at: START,
                        expires_at: START.plus(Duration::from_secs(30 * 86_400)),
                    },
                )?;
                Ok((admin.id, token))
            })
            .await
            .unwrap()
    };
    let scope = OperatorScope { tenant: a.tenant, operator: id, role: Role::Admin };
    let holds = |scope: OperatorScope, now: parley_domain::Timestamp| {
        let (app, digest) = (&app, digest.clone());
        async move { app.db.read(move |r| Ok(r.token_holds(&digest, scope, now)?)).await.unwrap() }
    };
    assert!(holds(scope, START).await);
    assert!(!holds(OperatorScope { tenant: b.tenant, ..scope }, START).await, "another tenant");
    assert!(!holds(OperatorScope { role: Role::Agent, ..scope }, START).await, "another role");
    assert!(!holds(OperatorScope { operator: a.agent, ..scope }, START).await, "another operator");
    assert!(!holds(scope, START.plus(Duration::from_secs(31 * 86_400))).await, "expired");
    app.db.write(move |tx| Ok(tx.revoke_token(tenant, token, START)?)).await.unwrap();
    assert!(!holds(scope, START).await, "revoked");
}

/// A sign-in of `operator` in `tenant`, as a login makes it.
async fn sign_in(app: &TestStore, tenant: TenantId, operator: OperatorId, hash: &str) -> TokenId {
    let token = NewOperatorToken {
        operator_id: operator,
        kind: TokenKind::Login,
        token_hash: parley_domain::password::token_digest(hash),
        device_name: None,
        created_at: START,
        expires_at: START.plus(Duration::from_secs(30 * 86_400)),
    };
    app.db.write(move |tx| Ok(tx.insert_operator_token(tenant, &token)?)).await.unwrap()
}

fn device(operator: OperatorId, token: TokenId, push: &str) -> NewDevice {
    NewDevice {
        operator_id: operator,
        token_id: token,
        platform: Platform::Ios,
        push_token: push.into(),
        push_key: parley_domain::password::token_digest(push),
        web_keys: None,
        app_id: None,
        name: None,
        locale: None,
        created_at: START,
    }
}

/// Devices and read markers: registered, listed, removed and moved only
/// in their own tenant, for the operator's own sign-in, and for
/// conversations the scope sees.
#[tokio::test]
async fn notifications_stay_in_their_scope() {
    let (app, a, b) = world().await;
    let (ta, tb, aa, ba) = (a.tenant, b.tenant, a.agent, b.agent);
    let a_token = sign_in(&app, ta, aa, "acme agent").await;
    let b_token = sign_in(&app, tb, ba, "globex agent").await;
    let theirs = attempt(&app, move |tx| tx.insert_device(tb, &device(ba, b_token, "globex-phone"))).await.flatten().expect("registered");
    assert!(
        attempt(&app, move |tx| tx.insert_device(ta, &device(ba, b_token, "mallory-phone"))).await.flatten().is_none(),
        "another tenant's operator and sign-in"
    );
    assert!(
        attempt(&app, move |tx| tx.insert_device(ta, &device(aa, b_token, "mallory-phone"))).await.flatten().is_none(),
        "one's own operator with another's sign-in"
    );
    assert_ne!(attempt(&app, move |tx| tx.delete_device(ta, ba, theirs.id)).await, Some(true), "another tenant's device");
    assert_ne!(attempt(&app, move |tx| tx.delete_device(ta, aa, theirs.id)).await, Some(true), "another operator's device");

    let agent = a.agent();
    let (own, hidden, foreign) = (a.conv1.id, a.conv2.id, b.conv1.id);
    let messages = |scope: ConversationScope, c: ConversationId| {
        let app = &app;
        async move { app.db.read(move |r| Ok(r.messages(scope, c, PAGE)?)).await.unwrap() }
    };
    let own_message = messages(agent, own).await[0].id;
    let hidden_message = messages(a.admin(), hidden).await[0].id;
    let foreign_message = messages(b.admin(), foreign).await[0].id;
    for (conversation, message, why) in [
        (hidden, hidden_message, "a conversation of a site the agent is not a member of"),
        (foreign, foreign_message, "another tenant's conversation"),
        (own, hidden_message, "a message of another conversation"),
        (own, foreign_message, "another tenant's message"),
    ] {
        assert!(attempt(&app, move |tx| tx.mark_read(agent, conversation, message, START)).await.flatten().is_none(), "{why}");
    }
    let marked = attempt(&app, move |tx| tx.mark_read(agent, own, own_message, START)).await.flatten().expect("its own");
    assert_eq!(marked.unread_count, 0);

    app.db
        .read(move |r| {
            assert_eq!(r.devices(tb, ba, START)?, vec![theirs.clone()], "the device is where it was");
            assert!(r.devices(ta, ba, START)?.is_empty(), "not listed under another tenant");
            assert!(r.devices(ta, aa, START)?.is_empty(), "nothing was registered for the tenant that tried");
            assert_eq!(r.unread_conversations(agent)?, 0, "the agent's one conversation is read, the other site's is not its");
            let b_agent = ConversationScope { tenant: tb, site: None, operator: Some((ba, Role::Agent)) };
            assert_eq!(r.unread_conversations(b_agent)?, 1, "the other tenant's markers did not move");
            let admin = r.operator_by_email(ta, "admin@acme.example.com")?.expect("the admin");
            let admin = ConversationScope { tenant: ta, site: None, operator: Some((admin.id, Role::Admin)) };
            let details = r.conversation_details(admin, own)?.expect("conversation");
            assert_eq!(details.unread_count, 1, "the admin's own marker did not move with the agent's");
            Ok(())
        })
        .await
        .unwrap();
    assert!(
        attempt(&app, move |tx| tx.insert_device(ta, &device(aa, a_token, "acme-phone"))).await.flatten().is_some(),
        "its own operator and sign-in register"
    );
}

/// A device of `operator` on a sign-in of its own.
async fn registered_device(app: &TestStore, tenant: TenantId, operator: OperatorId, push_token: &str) -> DeviceId {
    let push_token = push_token.to_owned();
    app.db
        .write(move |tx| {
            let token = tx.insert_operator_token(
                tenant,
                &NewOperatorToken {
                    operator_id: operator,
                    kind: TokenKind::Login,
                    token_hash: push_token.as_bytes().to_vec(),
                    device_name: None,
                    created_at: START,
                    expires_at: START.plus(Duration::from_secs(86_400)),
                },
            )?;
            let new = NewDevice {
                operator_id: operator,
                token_id: token,
                platform: Platform::Ios,
                push_key: push_token.as_bytes().to_vec(),
                push_token,
                web_keys: None,
                app_id: None,
                name: None,
                locale: None,
                created_at: START,
            };
            Ok(tx.insert_device(tenant, &new)?.expect("the sign-in holds").id)
        })
        .await
        .expect("device")
}

/// Pushes are queued for the devices of the conversation's own tenant and
/// of operators who see its site only, whoever the push names, and a
/// second change collapses into the first's row.
#[tokio::test]
async fn pushes_are_queued_within_the_conversations_tenant_and_site_and_collapse() {
    use parley_domain::push::{PushReason, QueuedPush};
    let (app, a, b) = world().await;
    let a_device = registered_device(&app, a.tenant, a.agent, "device-a").await;
    registered_device(&app, b.tenant, b.agent, "device-b").await;
    let queue = |tenant, conversation, recipient| QueuedPush {
        tenant,
        conversation,
        message: None,
        reason: PushReason::Message,
        recipient,
        actor: None,
        at: START,
    };
    for push in [
        // Another tenant's conversation, under this tenant.
        queue(a.tenant, b.conv1.id, None),
        // Naming another tenant's operator.
        queue(a.tenant, a.conv1.id, Some(b.agent)),
        // A site the agent is not a member of.
        queue(a.tenant, a.conv2.id, None),
        queue(a.tenant, a.conv2.id, Some(a.agent)),
    ] {
        app.db.write(move |tx| Ok(tx.queue_push(&push)?)).await.expect("queued");
    }
    let due = app.db.read(|r| Ok(r.due_pushes(START, 10)?)).await.expect("due");
    assert!(due.is_empty(), "nothing reaches a device outside the conversation's tenant and site: {due:?}");

    for reason in [PushReason::Message, PushReason::Conversation] {
        let push = QueuedPush { reason, ..queue(a.tenant, a.conv1.id, None) };
        app.db.write(move |tx| Ok(tx.queue_push(&push)?)).await.expect("queued");
    }
    let due = app.db.read(|r| Ok(r.due_pushes(START, 10)?)).await.expect("due");
    assert_eq!(due.len(), 1, "one row per device and conversation");
    assert_eq!(due[0].tenant_id, a.tenant);
    let claimed = app.db.write(move |tx| Ok(tx.lease_pushes(&due, START, START.plus(Duration::from_secs(60)))?)).await.expect("leased");
    assert_eq!(claimed.len(), 1);
    let push = &claimed[0];
    assert_eq!((push.target.device_id, push.operator_id, push.conversation_id), (a_device, a.agent, a.conv1.id));
    assert_eq!((push.reason, push.revision), (PushReason::Conversation, 2), "the latest change wins");
    assert!(push.live && push.unread_here, "the agent sees it and has not read it");
    let scope = push.operator_scope();
    assert_eq!(scope, a.agent(), "the badge is counted in the agent's own scope");
    assert_eq!(app.db.read(move |r| Ok(r.unread_conversations(scope)?)).await.expect("badge"), 1, "its one unread open conversation");
    let again = app.db.read(|r| Ok(r.due_pushes(START, 10)?)).await.expect("due");
    assert!(again.is_empty(), "a leased push is not due to anyone else");
}
