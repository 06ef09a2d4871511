use std::time::Duration;

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

/// A tenant with an admin token, an agent of its site, and `n` conversations
/// opened one minute apart (the last one most recent).
async fn inbox(app: &TestApp, n: usize) -> (Fixture, String, Vec<i64>) {
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    for i in 0..n {
        app.clock.advance(Duration::from_secs(60));
        app.open_conversation("/api", &f.token, &format!("visitor-{i}"), &format!("question {i}")).await;
    }
    let (_, body) = app.authed(Method::GET, "/api/mobile/conversations?per_page=100", &admin, None).await;
    let mut ids: Vec<i64> = body["conversations"].as_array().unwrap().iter().map(|c| c["id"].as_i64().unwrap()).collect();
    ids.reverse();
    (f, admin, ids)
}

fn ids(body: &Value) -> Vec<i64> {
    body["conversations"].as_array().unwrap().iter().map(|c| c["id"].as_i64().unwrap()).collect()
}

#[tokio::test]
async fn the_list_is_paginated_most_recent_first() {
    let app = TestApp::spawn().await;
    let (_, admin, all) = inbox(&app, 25).await;
    for prefix in PREFIXES {
        let (status, body) = app.authed(Method::GET, &format!("{prefix}/mobile/conversations"), &admin, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let mut meta = body["meta"].clone();
        assert!(meta["cursor"].as_str().is_some_and(|c| c.split('-').count() == 3), "a cursor: {meta}");
        meta.as_object_mut().unwrap().remove("cursor");
        assert_eq!(meta, json!({"current_page": 1, "per_page": 20, "total": 25, "last_page": 2}));
        let first: Vec<i64> = all.iter().rev().take(20).copied().collect();
        assert_eq!(ids(&body), first);
        let c = &body["conversations"][0];
        for key in ["id", "public_id", "status", "subject", "visitor", "assignee", "site", "last_message_at", "verified"] {
            assert!(c.get(key).is_some(), "{key} missing: {c}");
        }
        assert_eq!(c["visitor"]["uuid"], "visitor-24");
        assert_eq!(c["assignee"], Value::Null);

        let (_, body) = app.authed(Method::GET, &format!("{prefix}/mobile/conversations?page=2&per_page=20"), &admin, None).await;
        assert_eq!(ids(&body).len(), 5);
        assert_eq!(body["meta"]["current_page"], 2);
        let (_, body) = app.authed(Method::GET, &format!("{prefix}/mobile/conversations?page=3"), &admin, None).await;
        assert_eq!(ids(&body), Vec::<i64>::new(), "past the last page is empty, not an error");
        let (_, body) = app.authed(Method::GET, &format!("{prefix}/mobile/conversations?per_page=100"), &admin, None).await;
        assert_eq!(body["meta"]["last_page"], 1);
    }
    // A new message moves its conversation to the top.
    let (_, body) = app.authed(Method::GET, &format!("/api/mobile/conversations/{}", all[0]), &admin, None).await;
    let public_id = body["conversation"]["public_id"].as_str().unwrap().to_owned();
    app.clock.advance(Duration::from_secs(60));
    let (status, _) =
        app.authed(Method::POST, &format!("/api/mobile/conversations/{}/messages", all[0]), &admin, Some(json!({"body": "bump"}))).await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = app.authed(Method::GET, "/api/mobile/conversations?per_page=1", &admin, None).await;
    assert_eq!(body["conversations"][0]["public_id"], public_id.as_str());
}

#[tokio::test]
async fn listing_parameters_out_of_range_are_422() {
    let app = TestApp::spawn().await;
    let (_, admin, _) = inbox(&app, 0).await;
    for prefix in PREFIXES {
        for (query, fields) in [
            ("page=0", vec!["page"]),
            ("page=-1", vec!["page"]),
            ("page=abc", vec!["page"]),
            ("per_page=0", vec!["per_page"]),
            ("per_page=101", vec!["per_page"]),
            ("status=pending", vec!["status"]),
            ("page=0&per_page=500&status=x", vec!["page", "per_page", "status"]),
        ] {
            let (status, body) = app.authed(Method::GET, &format!("{prefix}/mobile/conversations?{query}"), &admin, None).await;
            assert_fields(status, &body, &fields);
        }
    }
}

/// Each filter's `meta.total`, read through the API.
async fn totals(app: &TestApp, token: &str) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    for filter in ["all", "open", "unassigned", "assigned", "mine", "closed"] {
        let query = if filter == "all" { String::new() } else { format!("?status={filter}") };
        let (status, body) = app.authed(Method::GET, &format!("/api/v1/mobile/conversations{query}"), token, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        out.push((filter, body["meta"]["total"].clone()));
    }
    out
}

/// The totals are kept as rows the database adds on every change and the
/// sweeper folds (`conversation_counts`): they follow assignment, closing,
/// reopening and erasure, read the same before and after a fold, and stay
/// within the reader's scope.
#[tokio::test]
async fn totals_follow_every_change_and_outlive_folding() {
    let app = TestApp::spawn().await;
    let (f, admin, all) = inbox(&app, 4).await;
    let globex = app.fixture("globex", &[]).await;
    app.open_conversation("/api", &globex.token, "elsewhere", "not acme's").await;
    let docs = app.site("acme-docs", f.scope.tenant, &[]).await;
    app.operator(&f, "docs@acme.example.com", Role::Agent, &[docs.scope.site]).await;
    let path = |id: i64, action: &str| format!("/api/mobile/conversations/{id}/{action}");
    app.authed(Method::POST, &path(all[0], "assign"), &admin, None).await;
    app.authed(Method::POST, &path(all[1], "close"), &admin, None).await;
    let (status, _) = app.authed(Method::DELETE, &format!("/api/admin/conversations/{}", all[3]), &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let n = |v: [u64; 6]| -> Vec<(&'static str, Value)> {
        ["all", "open", "unassigned", "assigned", "mine", "closed"].into_iter().zip(v.map(|x| json!(x))).collect()
    };
    assert_eq!(totals(&app, &admin).await, n([3, 2, 1, 1, 1, 1]));
    let fold = || app.db.write(|tx| Ok(tx.fold_conversation_counts()?));
    fold().await.unwrap();
    assert_eq!(totals(&app, &admin).await, n([3, 2, 1, 1, 1, 1]), "folding changes no total");
    fold().await.unwrap();
    assert_eq!(totals(&app, &admin).await, n([3, 2, 1, 1, 1, 1]), "nor does folding twice");

    // A reply reopens the closed one, assigned to whoever replied.
    let (status, body) = app.authed(Method::POST, &path(all[1], "messages"), &admin, Some(json!({"body": "back"}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let after_reply = totals(&app, &admin).await;
    assert_eq!(after_reply[0], ("all", json!(3)));
    assert_eq!(after_reply[5], ("closed", json!(0)));
    fold().await.unwrap();
    assert_eq!(totals(&app, &admin).await, after_reply);

    let nothing = n([0, 0, 0, 0, 0, 0]);
    assert_eq!(totals(&app, &app.login("docs@acme.example.com").await).await, nothing, "an agent without the site");
    let elsewhere = totals(&app, &app.login("admin@globex.example.com").await).await;
    assert_eq!((&elsewhere[0], &elsewhere[2]), (&("all", json!(1)), &("unassigned", json!(1))), "another tenant counts its own");
    app.stop().await;
}

#[tokio::test]
async fn status_filters_select_by_state() {
    let app = TestApp::spawn().await;
    let (f, admin, all) = inbox(&app, 3).await;
    app.authed(Method::POST, &format!("/api/mobile/conversations/{}/assign", all[0]), &admin, None).await;
    app.authed(Method::POST, &format!("/api/mobile/conversations/{}/close", all[1]), &admin, None).await;
    for (status, expected) in [
        ("unassigned", vec![all[2]]),
        ("assigned", vec![all[0]]),
        ("closed", vec![all[1]]),
        ("open", vec![all[2], all[0]]),
        ("mine", vec![all[0]]),
    ] {
        let (_, body) = app.authed(Method::GET, &format!("/api/v1/mobile/conversations?status={status}"), &admin, None).await;
        let mut got = ids(&body);
        got.sort_unstable();
        let mut want = expected.clone();
        want.sort_unstable();
        assert_eq!(got, want, "{status}");
        assert_eq!(body["meta"]["total"], want.len());
    }
    // Another admin of the tenant sees every one, but none is its own.
    app.operator(&f, "second@acme.example.com", Role::Admin, &[]).await;
    let second = app.login("second@acme.example.com").await;
    let (_, body) = app.authed(Method::GET, "/api/v1/mobile/conversations?status=mine", &second, None).await;
    assert_eq!(ids(&body), Vec::<i64>::new());
    let (status, body) = app.authed(Method::GET, "/api/v1/mobile/conversations?status=theirs", &second, None).await;
    assert_fields(status, &body, &["status"]);
    assert!(body["error"]["fields"]["status"][0].as_str().unwrap_or_default().contains("mine"), "{body}");
}

async fn widget_messages(app: &TestApp, token: &str, public_id: &str) -> Vec<Value> {
    let (_, body) = app.get(&format!("/api/widget/conversations/{public_id}/messages?token={token}")).await;
    body["messages"].as_array().unwrap().clone()
}

/// Open, assign, reply, the visitor sees the reply, transfer, close, close
/// again, reopen by a visitor message.
#[tokio::test]
async fn the_whole_lifecycle() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let ann = app.operator(&f, "ann@acme.example", Role::Agent, &[f.scope.site]).await;
    let bob = app.operator(&f, "bob@acme.example", Role::Agent, &[f.scope.site]).await;
    let ann_token = app.login("ann@acme.example").await;
    let bob_token = app.login("bob@acme.example").await;
    let public_id = app.open_conversation("/api", &f.token, "visitor", "Hello?").await;
    assert_eq!(app.events("acme").await.len(), 2, "conversation.created and message.created");
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &ann_token, None).await;
    let id = list["conversations"][0]["id"].as_i64().unwrap();
    let base = "/api/v1/mobile/conversations";

    let (status, body) = app.authed(Method::POST, &format!("{base}/{id}/assign"), &ann_token, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["conversation"]["status"], "assigned");
    assert_eq!(body["conversation"]["assignee"]["id"], ann);

    let (status, body) =
        app.authed(Method::POST, &format!("{base}/{id}/messages"), &ann_token, Some(json!({"body": " How can I help? "}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["message"]["body"], "How can I help?");
    assert_eq!(body["message"]["sender"], json!({"type": "operator", "name": "ann"}));
    assert_eq!(body["conversation"]["id"], id);
    assert_eq!(app.events("acme").await.len(), 3, "message.created for the reply");

    // Who took it is for operators: the visitor sees the reply.
    let seen = widget_messages(&app, &f.token, &public_id).await;
    let bodies: Vec<&str> = seen.iter().map(|m| m["body"].as_str().unwrap()).collect();
    assert_eq!(bodies, ["Hello?", "How can I help?"]);
    let (_, ops) = app.authed(Method::GET, &format!("{base}/{id}/messages"), &ann_token, None).await;
    let joined = &ops["messages"][1];
    assert_eq!((joined["body"].as_str(), joined["sender"]["type"].as_str()), (Some("ann joined the conversation"), Some("system")));
    assert_eq!(joined["internal"], true, "{joined}");

    let (status, body) = app
        .authed(
            Method::POST,
            &format!("{base}/{id}/transfer"),
            &ann_token,
            Some(json!({"operator_id": bob, "note": "VIP customer, be nice"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["conversation"]["assignee"]["id"], bob);
    let seen = widget_messages(&app, &f.token, &public_id).await;
    assert!(seen.iter().all(|m| m["body"] != "VIP customer, be nice"), "the note never reaches the widget");
    assert_eq!(seen.last().unwrap()["body"], "How can I help?", "nor the transfer");
    let (_, ops) = app.authed(Method::GET, &format!("{base}/{id}/messages"), &bob_token, None).await;
    assert!(ops["messages"].as_array().unwrap().iter().any(|m| m["body"] == "ann transferred the conversation to bob"), "{ops}");
    let note = ops["messages"].as_array().unwrap().iter().find(|m| m["body"] == "VIP customer, be nice").expect("operators see the note");
    assert_eq!(note["internal"], true);

    let (status, body) = app.authed(Method::POST, &format!("{base}/{id}/close"), &bob_token, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["conversation"]["status"], "closed");
    assert_eq!(app.events("acme").await, ["conversation.created", "message.created", "message.created", "conversation.closed"]);
    // The visitor is told it closed, by nobody in particular; operators
    // see who closed it.
    let seen = widget_messages(&app, &f.token, &public_id).await;
    assert_eq!(seen.last().unwrap()["body"], "Conversation closed");
    assert_eq!(seen.last().unwrap()["sender"], json!({"type": "system", "name": null}));
    let (_, ops) = app.authed(Method::GET, &format!("{base}/{id}/messages"), &bob_token, None).await;
    assert_eq!(ops["messages"].as_array().unwrap().last().unwrap()["sender"], json!({"type": "system", "name": "bob"}));
    let count = widget_messages(&app, &f.token, &public_id).await.len();

    let (status, body) = app.authed(Method::POST, &format!("{base}/{id}/close"), &ann_token, None).await;
    assert_eq!(status, StatusCode::OK, "closing again is fine");
    assert_eq!(body["conversation"]["status"], "closed");
    assert_eq!(app.events("acme").await.len(), 4, "and emits nothing");
    assert_eq!(widget_messages(&app, &f.token, &public_id).await.len(), count, "and adds no message");

    let (status, body) = app.post_message("/api", &f.token, &public_id, "One more thing").await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(body["conversation"]["status"], "assigned", "reopened to its assignee");
    let (_, body) = app.authed(Method::GET, &format!("{base}/{id}"), &bob_token, None).await;
    assert_eq!(body["conversation"]["status"], "assigned");
    assert_eq!(body["conversation"]["assignee"]["id"], bob);
}

#[tokio::test]
async fn a_visitor_message_reopens_an_unassigned_conversation_to_unassigned() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "v", "hi").await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let id = list["conversations"][0]["id"].as_i64().unwrap();
    app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/close"), &admin, None).await;
    let (_, body) = app.post_message("/api", &f.token, &public_id, "hello again").await;
    assert_eq!(body["conversation"]["status"], "unassigned");
}

#[tokio::test]
async fn assign_and_transfer_follow_the_state_rules() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let other_site = app.site("acme", f.scope.tenant, &[]).await;
    let ann = app.operator(&f, "ann@acme.example", Role::Agent, &[f.scope.site]).await;
    let outsider = app.operator(&f, "out@acme.example", Role::Agent, &[other_site.scope.site]).await;
    let gone = app.operator(&f, "gone@acme.example", Role::Agent, &[f.scope.site]).await;
    let globex = app.fixture("globex", &[]).await;
    let foreign = app.operator(&globex, "ann@globex.example", Role::Admin, &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    app.authed(Method::PATCH, &format!("/api/admin/operators/{gone}"), &admin, Some(json!({"active": false}))).await;
    app.open_conversation("/api", &f.token, "v", "hi").await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let id = list["conversations"][0]["id"].as_i64().unwrap();

    for prefix in PREFIXES {
        let base = format!("{prefix}/mobile/conversations/{id}");
        let (status, body) = app.authed(Method::POST, &format!("{base}/assign"), &admin, Some(json!({"operator_id": ann}))).await;
        assert_eq!(status, StatusCode::OK, "assigning to the current assignee is a no-op, not an error: {body}");
        assert_eq!(body["conversation"]["assignee"]["id"], ann);
        for target in [outsider, gone, foreign, 999_999] {
            for action in ["assign", "transfer"] {
                let (status, body) =
                    app.authed(Method::POST, &format!("{base}/{action}"), &admin, Some(json!({"operator_id": target}))).await;
                assert_fields(status, &body, &["operator_id"]);
            }
        }
        let (status, body) = app.authed(Method::POST, &format!("{base}/transfer"), &admin, Some(json!({"operator_id": ann}))).await;
        assert_fields(status, &body, &["operator_id"]);
        let (status, body) = app.authed(Method::POST, &format!("{base}/transfer"), &admin, Some(json!({}))).await;
        assert_fields(status, &body, &["operator_id"]);
        let (status, body) = app.authed(Method::POST, &format!("{base}/transfer"), &admin, Some(json!({"operator_id": "ann"}))).await;
        assert_fields(status, &body, &["operator_id"]);
    }
    let (_, body) = app.authed(Method::GET, &format!("/api/mobile/conversations/{id}"), &admin, None).await;
    assert_eq!(body["conversation"]["assignee"]["id"], ann, "refused changes changed nothing");

    app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/close"), &admin, None).await;
    for action in ["assign", "transfer"] {
        let (status, body) =
            app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/{action}"), &admin, Some(json!({"operator_id": ann}))).await;
        assert_error(status, &body, StatusCode::CONFLICT, "conflict");
    }
    let (status, body) = app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/assign"), &admin, None).await;
    assert_error(status, &body, StatusCode::CONFLICT, "conflict");
}

#[tokio::test]
async fn assign_with_an_operator_names_it_in_the_system_message() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let ann = app.operator(&f, "ann@acme.example", Role::Agent, &[f.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "v", "hi").await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let id = list["conversations"][0]["id"].as_i64().unwrap();
    let (status, body) =
        app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/assign"), &admin, Some(json!({"operator_id": ann}))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["conversation"]["assignee"]["name"], "ann");
    let seen = widget_messages(&app, &f.token, &public_id).await;
    assert_eq!(seen.last().unwrap()["body"], "hi", "the visitor is not told who routed it to whom");
    let (_, ops) = app.authed(Method::GET, &format!("/api/mobile/conversations/{id}/messages"), &admin, None).await;
    assert_eq!(ops["messages"].as_array().unwrap().last().unwrap()["body"], "admin assigned the conversation to ann");
}

#[tokio::test]
async fn reading_and_replying_validate_input() {
    let app = TestApp::spawn().await;
    let (_, admin, all) = inbox(&app, 1).await;
    let id = all[0];
    for prefix in PREFIXES {
        let base = format!("{prefix}/mobile/conversations");
        let (status, body) = app.authed(Method::GET, &format!("{base}/{id}"), &admin, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["conversation"]["id"], id);
        for missing in ["999999", "0", "-3", "abc"] {
            let (status, body) = app.authed(Method::GET, &format!("{base}/{missing}"), &admin, None).await;
            assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
            let (status, body) = app.authed(Method::POST, &format!("{base}/{missing}/close"), &admin, None).await;
            assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
        }
        let (status, body) = app.authed(Method::POST, &format!("{base}/{id}/messages"), &admin, Some(json!({"body": "  "}))).await;
        assert_fields(status, &body, &["body"]);
        let (status, body) = app.authed(Method::POST, &format!("{base}/{id}/messages"), &admin, Some(json!({}))).await;
        assert_fields(status, &body, &["body"]);
        let (status, body) = app.authed(Method::GET, &format!("{base}/{id}/messages?after_id=x"), &admin, None).await;
        assert_fields(status, &body, &["after_id"]);
        let res = app
            .client
            .post(app.url(&format!("{base}/{id}/messages")))
            .bearer_auth(&admin)
            .header("content-type", "text/plain")
            .body("hello")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let res = app
            .client
            .post(app.url(&format!("{base}/{id}/assign")))
            .bearer_auth(&admin)
            .header("content-type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    }
    let (_, body) = app.authed(Method::GET, &format!("/api/mobile/conversations/{id}/messages"), &admin, None).await;
    let first = body["messages"][0]["id"].as_i64().unwrap();
    let (_, body) = app.authed(Method::GET, &format!("/api/mobile/conversations/{id}/messages?after_id={first}"), &admin, None).await;
    assert_eq!(body["messages"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn taking_a_conversation_twice_is_safe_to_retry() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "v", "hi").await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let id = list["conversations"][0]["id"].as_i64().unwrap();
    for _ in 0..2 {
        let (status, body) = app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/assign"), &admin, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["conversation"]["status"], "assigned");
    }
    let (_, ops) = app.authed(Method::GET, &format!("/api/mobile/conversations/{id}/messages"), &admin, None).await;
    let joined = ops["messages"].as_array().unwrap().iter().filter(|m| m["sender"]["type"] == "system").count();
    assert_eq!(joined, 1, "one system message for one change");
    let shown = widget_messages(&app, &f.token, &public_id).await.iter().filter(|m| m["sender"]["type"] == "system").count();
    assert_eq!(shown, 0, "and it is for operators");
}

/// A closed conversation goes back to its assignee only if that operator
/// can still answer it; otherwise it reopens into the unassigned queue.
#[tokio::test]
async fn a_reopened_conversation_never_goes_back_to_an_operator_who_cannot_answer() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let other_site = app.site("acme", f.scope.tenant, &[]).await;
    let base = "/api/v1/mobile/conversations";
    for case in ["disabled", "moved to another site"] {
        let email = format!("{}@acme.example", case.len());
        let agent = app.operator(&f, &email, Role::Agent, &[f.scope.site]).await;
        let public_id = app.open_conversation("/api", &f.token, case, "hi").await;
        let (_, list) = app.authed(Method::GET, &format!("{base}?status=unassigned"), &admin, None).await;
        let id = list["conversations"][0]["id"].as_i64().unwrap();
        let (status, _) = app.authed(Method::POST, &format!("{base}/{id}/assign"), &admin, Some(json!({"operator_id": agent}))).await;
        assert_eq!(status, StatusCode::OK);
        app.authed(Method::POST, &format!("{base}/{id}/close"), &admin, None).await;
        let change = if case == "disabled" { json!({"active": false}) } else { json!({"site_ids": [other_site.scope.site.0]}) };
        let (status, body) = app.authed(Method::PATCH, &format!("/api/v1/admin/operators/{agent}"), &admin, Some(change)).await;
        assert_eq!(status, StatusCode::OK, "{body}");

        let (status, body) = app.post_message("/api", &f.token, &public_id, "hello again").await;
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(body["conversation"]["status"], "unassigned", "{case}");
        let (_, body) = app.authed(Method::GET, &format!("{base}/{id}"), &admin, None).await;
        assert_eq!(
            (body["conversation"]["status"].as_str(), &body["conversation"]["assignee"]),
            (Some("unassigned"), &Value::Null),
            "{case}"
        );
        let (_, queue) = app.authed(Method::GET, &format!("{base}?status=unassigned"), &admin, None).await;
        assert!(queue["conversations"].as_array().unwrap().iter().any(|c| c["id"] == id), "{case}: back in the queue");
    }
}

/// Routing lines written before the visitor stopped seeing them are
/// migrated: who took, assigned or handed over a conversation becomes
/// operator-only (in the messages and the visitor's feed), and the close
/// and reopen lines name the operator only to operators.
#[tokio::test]
async fn routing_lines_written_before_are_kept_among_operators() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _database) = fresh_database(dir.path(), "routing.sqlite3").await;
    let first = TestApp::with().var("PARLEY_DATABASE_URL", &url).start().await;
    let f = first.fixture("acme", &[]).await;
    let bea = first.operator(&f, "bea@acme.example.com", Role::Admin, &[]).await;
    let admin = first.login("admin@acme.example.com").await;
    let public_id = first.open_conversation("/api", &f.token, "v", "hi").await;
    let (_, list) = first.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let id = list["conversations"][0]["id"].as_i64().unwrap();
    let path = |action: &str| format!("/api/mobile/conversations/{id}/{action}");
    first.authed(Method::POST, &path("assign"), &admin, None).await;
    first.authed(Method::POST, &path("assign"), &admin, Some(json!({"operator_id": bea}))).await;
    first.authed(Method::POST, &path("transfer"), &first.login("bea@acme.example.com").await, Some(json!({"operator_id": 1}))).await;
    first.authed(Method::POST, &path("close"), &admin, None).await;
    let mut browser = crate::web_browser::Browser::signed_in(&first, "admin@acme.example.com").await;
    browser.acted(id, "reopen", &[]).await;
    first.stop().await;
    // As the release before wrote them, and the migration not yet run.
    let unmigrate = if backend() == "postgres" { "DELETE FROM parley_migrations WHERE version >= 8;" } else { "PRAGMA user_version = 13;" };
    let undo_counts = if backend() == "postgres" {
        "DROP TRIGGER conversation_counts_added ON conversations; DROP TRIGGER conversation_counts_moved ON conversations;
         DROP INDEX visitors_search;"
    } else {
        "DROP TRIGGER conversation_counts_insert; DROP TRIGGER conversation_counts_delete; DROP TRIGGER conversation_counts_update;
         DROP TRIGGER visitors_fts_insert; DROP TRIGGER visitors_fts_delete; DROP TRIGGER visitors_fts_update; DROP TABLE visitors_fts;"
    };
    run_sql(
        &url,
        &format!(
            "UPDATE events SET widget = TRUE WHERE message_id IN (SELECT id FROM messages WHERE sender_type = 'system' AND internal = TRUE);
             UPDATE messages SET internal = FALSE WHERE sender_type = 'system';
             UPDATE messages SET body = 'admin closed the conversation', sender_name = NULL, sender_id = NULL WHERE body = 'Conversation closed';
             UPDATE messages SET body = 'admin reopened the conversation', sender_name = NULL, sender_id = NULL WHERE body = 'Conversation reopened';
             DROP INDEX IF EXISTS messages_unread_by_visitor;
             ALTER TABLE messages DROP COLUMN read_by_visitor_at;
             DROP INDEX IF EXISTS visitors_site_user;
             ALTER TABLE visitors DROP COLUMN user_id;
             ALTER TABLE visitors DROP COLUMN site_email;
             ALTER TABLE visitors DROP COLUMN attributes;
             ALTER TABLE installations DROP COLUMN identity_secret;
             ALTER TABLE installations DROP COLUMN previous_identity_secret;
             ALTER TABLE installations DROP COLUMN previous_identity_secret_expires_at;
             ALTER TABLE installations DROP COLUMN identity_required;
             ALTER TABLE visitors DROP COLUMN locale;
             ALTER TABLE sites DROP COLUMN locale;
             ALTER TABLE sites DROP COLUMN texts;
             ALTER TABLE sites DROP COLUMN business_hours;
             ALTER TABLE conversations DROP COLUMN away_replied_at;
             DROP TABLE attachments;
             ALTER TABLE messages DROP COLUMN attachments;
             ALTER TABLE sites DROP COLUMN attachment_types;
             ALTER TABLE conversations DROP COLUMN last_body;
             ALTER TABLE conversations DROP COLUMN waiting_since;
             DROP TABLE audit_entries;
             DROP TABLE password_links;
             ALTER TABLE operators DROP COLUMN notify_unassigned;
             ALTER TABLE operators DROP COLUMN notify_mine;
             DROP TABLE conversation_counts;
             {undo_counts}
             {unmigrate}"
        ),
    )
    .await;

    let app = TestApp::with().var("PARLEY_DATABASE_URL", &url).start().await;
    let seen = widget_messages(&app, &f.token, &public_id).await;
    let shown: Vec<(&str, &Value)> = seen.iter().map(|m| (m["body"].as_str().unwrap(), &m["sender"]["name"])).collect();
    assert_eq!(shown, [("hi", &Value::Null), ("Conversation closed", &Value::Null), ("Conversation reopened", &Value::Null)]);
    let (_, ops) = app
        .authed(Method::GET, &format!("/api/mobile/conversations/{id}/messages"), &app.login("admin@acme.example.com").await, None)
        .await;
    let lines: Vec<(String, bool, Value)> = ops["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["body"].as_str().unwrap().to_owned(), m["internal"].as_bool().unwrap(), m["sender"]["name"].clone()))
        .collect();
    assert_eq!(
        lines,
        [
            ("hi".to_owned(), false, Value::Null),
            ("admin joined the conversation".into(), true, Value::Null),
            ("admin assigned the conversation to bea".into(), true, Value::Null),
            ("bea transferred the conversation to admin".into(), true, Value::Null),
            ("Conversation closed".into(), false, json!("admin")),
            ("Conversation reopened".into(), false, json!("admin")),
        ]
    );
    // The visitor's feed carries none of the routing lines any more.
    let scope = f.scope;
    let feed = app
        .db
        .read(move |r| {
            let c = r.conversation_by_public_id(scope.into(), &public_id)?.ok_or(parley_domain::DomainError::NotFound)?;
            Ok(r.conversation_feed_after(scope.into(), c.id, parley_domain::feed::Position::START, true, 100)?)
        })
        .await
        .unwrap();
    let bodies: Vec<String> = feed.iter().filter_map(|i| i.message.as_ref().map(|m| m.body.clone())).collect();
    assert_eq!(bodies, ["hi", "Conversation closed", "Conversation reopened"]);
}

/// A list shows the first line of the latest message the visitor or an
/// operator wrote, and since when the visitor has waited for an answer:
/// from its first message after the last reply, none once answered.
#[tokio::test]
async fn the_list_shows_the_latest_line_and_how_long_the_visitor_has_waited() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let first = |body: &Value| body["conversations"][0].clone();
    let public_id = app.open_conversation("/api", &f.token, "v1", "  \n  Where is my order?\nIt was due Monday").await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let row = first(&list);
    assert_eq!(row["last_message_preview"], "Where is my order?");
    let asked_at = row["last_message_at"].clone();
    assert_eq!(row["waiting_since"], asked_at, "waiting since the question");

    app.clock.advance(Duration::from_secs(600));
    let (status, _) = app.post_message("/api", &f.token, &public_id, &"Hello? ".repeat(40)).await;
    assert_eq!(status, StatusCode::CREATED);
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let row = first(&list);
    assert_eq!(row["waiting_since"], asked_at, "still since the first unanswered message");
    let preview = row["last_message_preview"].as_str().unwrap();
    assert!(preview.ends_with('…') && preview.chars().count() == 141, "{preview}");

    let id = row["id"].as_i64().unwrap();
    let (status, _) =
        app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/messages"), &admin, Some(json!({"body": "On its way!"}))).await;
    assert_eq!(status, StatusCode::OK);
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    assert_eq!((first(&list)["last_message_preview"].as_str(), &first(&list)["waiting_since"]), (Some("On its way!"), &Value::Null));

    app.clock.advance(Duration::from_secs(60));
    app.post_message("/api", &f.token, &public_id, "Thanks!").await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let row = first(&list);
    assert_eq!(row["waiting_since"], row["last_message_at"], "waiting again, since this message");
    let mut browser = crate::web_browser::Browser::signed_in(&app, "admin@acme.example.com").await;
    let inbox = browser.inbox("").await;
    assert!(inbox.html.contains(r#"<span class="preview">Thanks!</span>"#), "{}", inbox.html);
    assert!(inbox.html.contains("Waiting since"), "{}", inbox.html);
}
