//! Requests running side by side, as they do on PostgreSQL: what SQLite's
//! single writer gives for free must still hold through the services (no
//! lost update, no 409 for a race, limits that concurrent requests cannot
//! slip under). A lost connection is the storage suite's
//! (`parley-storage/tests/store`).

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::*;

/// Two widget syncs of one new visitor uuid at the same time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn simultaneous_first_syncs_of_one_visitor_all_succeed() {
    let app = Arc::new(TestApp::spawn().await);
    let f = app.fixture("acme", &[]).await;
    let mut failures = Vec::new();
    for round in 0..30 {
        let uuid = format!("v-{round}");
        let mut tasks = Vec::new();
        for n in 0..4 {
            let (app, token, uuid) = (app.clone(), f.token.clone(), uuid.clone());
            tasks.push(tokio::spawn(async move {
                app.post("/api/widget/visitors", json!({"token": token, "uuid": uuid, "name": format!("n{n}")})).await
            }));
        }
        for t in tasks {
            let (status, body) = t.await.unwrap();
            if !status.is_success() {
                failures.push((round, status, body));
            }
        }
    }
    assert!(failures.is_empty(), "{} failed syncs, e.g. {:?}", failures.len(), failures.first());
}

/// Two syncs of one existing visitor, each telling one new field.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn simultaneous_profile_updates_keep_every_field() {
    let app = Arc::new(TestApp::spawn().await);
    let f = app.fixture("acme", &[]).await;
    let mut lost = Vec::new();
    for round in 0..15 {
        let uuid = format!("v-{round}");
        let (s, _) = app.post("/api/widget/visitors", json!({"token": f.token, "uuid": uuid})).await;
        assert_eq!(s, StatusCode::CREATED);
        let a = {
            let (app, token, uuid) = (app.clone(), f.token.clone(), uuid.clone());
            tokio::spawn(async move { app.post("/api/widget/visitors", json!({"token": token, "uuid": uuid, "name": "Ann"})).await })
        };
        let b = {
            let (app, token, uuid) = (app.clone(), f.token.clone(), uuid.clone());
            tokio::spawn(async move {
                app.post("/api/widget/visitors", json!({"token": token, "uuid": uuid, "email": "ann@example.com"})).await
            })
        };
        assert!(a.await.unwrap().0.is_success());
        assert!(b.await.unwrap().0.is_success());
        let scope = f.scope;
        let v = app.db.read(move |r| Ok(r.visitor_by_uuid(scope, &uuid)?)).await.unwrap().unwrap();
        if v.profile.name.is_none() || v.profile.email.is_none() {
            lost.push((round, v.profile));
        }
    }
    assert!(lost.is_empty(), "{} of 15 rounds lost a field: {:?}", lost.len(), lost.first());
}

/// A message carrying the page it was sent from, against a sync telling
/// the visitor's name: the message locks the visitor with its
/// conversation, so neither change overwrites the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_message_and_a_profile_sync_keep_both_changes() {
    let app = Arc::new(TestApp::spawn().await);
    let f = app.fixture("acme", &[]).await;
    let mut lost = Vec::new();
    for round in 0..15 {
        let uuid = format!("v-{round}");
        let public_id = app.open_conversation("/api", &f.token, &uuid, "hello").await;
        let url = format!("https://www.acme.example/page-{round}");
        let message = {
            let (app, token, url) = (app.clone(), f.token.clone(), url.clone());
            tokio::spawn(async move {
                app.post(
                    &format!("/api/widget/conversations/{public_id}/messages"),
                    json!({"token": token, "body": "and again", "current_url": url}),
                )
                .await
            })
        };
        let sync = {
            let (app, token, uuid) = (app.clone(), f.token.clone(), uuid.clone());
            tokio::spawn(async move { app.post("/api/widget/visitors", json!({"token": token, "uuid": uuid, "name": "Ann"})).await })
        };
        let (status, body) = message.await.unwrap();
        assert!(status.is_success(), "{body}");
        assert!(sync.await.unwrap().0.is_success());
        let scope = f.scope;
        let v = app.db.read(move |r| Ok(r.visitor_by_uuid(scope, &uuid)?)).await.unwrap().unwrap();
        if v.profile.name.as_deref() != Some("Ann") || v.profile.last_url.as_deref() != Some(url.as_str()) {
            lost.push((round, v.profile));
        }
    }
    assert!(lost.is_empty(), "{} of 15 rounds lost a change: {:?}", lost.len(), lost.first());
}

/// A visitor opening a conversation while writing in another, both
/// with the page it is on: the open locks the visitor and the message its
/// conversation and then the visitor, so neither waits on the other in a
/// circle (PostgreSQL would end one as a deadlock, "unavailable").
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_visitor_opening_a_conversation_while_writing_in_another_never_deadlocks() {
    let app = Arc::new(TestApp::spawn().await);
    let f = app.fixture("acme", &[]).await;
    let uuid = "v-busy";
    let public_id = app.open_conversation("/api", &f.token, uuid, "hello").await;
    let mut failed = Vec::new();
    for round in 0..20 {
        let url = format!("https://www.acme.example/page-{round}");
        let mut tasks = Vec::new();
        for n in 0..2 {
            let message = json!({"token": f.token, "body": format!("message {n}"), "current_url": format!("{url}?m={n}")});
            let open = json!({"token": f.token, "visitor_uuid": uuid, "message": "another question", "privacy_accepted": true,
                "current_url": format!("{url}?o={n}")});
            for (path, body) in
                [(format!("/api/widget/conversations/{public_id}/messages"), message), ("/api/widget/conversations".into(), open)]
            {
                let app = app.clone();
                tasks.push(tokio::spawn(async move { app.post(&path, body).await }));
            }
        }
        for t in tasks {
            let (status, body) = t.await.unwrap();
            if !status.is_success() {
                failed.push((round, status, body));
            }
        }
    }
    assert!(failed.is_empty(), "{} requests failed: {:?}", failed.len(), failed.first());
}

/// The per-recipient email limit (1 per hour here) against parallel starts
/// from different conversations.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn simultaneous_verification_starts_respect_the_recipient_limit() {
    let smtp = crate::smtp_sink::SmtpSink::start().await;
    let app = Arc::new(
        TestApp::with()
            .var("PARLEY_SMTP_URL", &smtp.url())
            .var("PARLEY_MAIL_FROM", "Parley <noreply@parley.test>")
            .var("PARLEY_PUBLIC_URL", "http://chat.parley.test")
            .var("PARLEY_RATE_LIMITS", "on")
            .var("PARLEY_RATE_LIMIT_WIDGET_WRITES", "100000/1h")
            .var("PARLEY_RATE_LIMIT_CONVERSATION_MESSAGES", "100000/1h")
            .var("PARLEY_VERIFY_LIMIT_PER_ADDRESS", "100000/1h")
            .var("PARLEY_VERIFY_EMAIL_LIMIT_PER_RECIPIENT", "1/1h")
            .start()
            .await,
    );
    let f = app.fixture("acme", &[]).await;
    let mut conversations = Vec::new();
    for n in 0..8 {
        conversations.push(app.open_conversation("/api", &f.token, &format!("v{n}"), "hi").await);
    }
    let mut tasks = Vec::new();
    for public_id in conversations {
        let (app, token) = (app.clone(), f.token.clone());
        tasks.push(tokio::spawn(async move {
            app.post(
                &format!("/api/widget/conversations/{public_id}/verification/start"),
                json!({"token": token, "method": "email_otp", "target": "victim@example.com"}),
            )
            .await
        }));
    }
    let mut accepted = 0;
    for t in tasks {
        let (status, body) = t.await.unwrap();
        if status == StatusCode::ACCEPTED {
            accepted += 1;
        } else {
            eprintln!("{status} {body}");
        }
    }
    assert_eq!(accepted, 1, "the limit is 1 email per recipient per hour; {accepted} went out");
}
