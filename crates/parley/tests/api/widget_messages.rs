use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

fn ids(body: &Value) -> Vec<i64> {
    body["messages"].as_array().unwrap().iter().map(|m| m["id"].as_i64().unwrap()).collect()
}

#[tokio::test]
async fn visitors_post_and_read_messages() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    for prefix in PREFIXES {
        let public_id = app.open_conversation(prefix, &f.token, "ann", "first").await;
        let (status, body) = app.post_message(prefix, &f.token, &public_id, "  second  ").await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["message"]["body"], "second");
        assert_eq!(body["message"]["sender"]["type"], "visitor");
        assert_eq!(body["conversation"]["public_id"], public_id.as_str());
        assert_eq!(body["conversation"]["status"], "unassigned");
        let second = body["message"]["id"].as_i64().unwrap();

        let path = format!("{prefix}/widget/conversations/{public_id}/messages?token={}", f.token);
        let (status, body) = app.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["conversation"]["public_id"], public_id.as_str());
        let bodies: Vec<&str> = body["messages"].as_array().unwrap().iter().map(|m| m["body"].as_str().unwrap()).collect();
        assert_eq!(bodies, ["first", "second"]);
        let all = ids(&body);
        assert!(all[0] < all[1]);

        let (_, body) = app.get(&format!("{path}&after_id={}", all[0])).await;
        assert_eq!(ids(&body), [second]);
        let (_, body) = app.get(&format!("{path}&after_id={second}")).await;
        assert_eq!(ids(&body), Vec::<i64>::new());
    }
}

#[tokio::test]
async fn without_after_id_the_latest_hundred_come_oldest_first() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api", &f.token, "ann", "message 0").await;
    for n in 1..=104 {
        let (status, _) = app.post_message("/api", &f.token, &public_id, &format!("message {n}")).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let path = format!("/api/v1/widget/conversations/{public_id}/messages?token={}", f.token);
    let (_, body) = app.get(&path).await;
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 100);
    assert_eq!(messages[0]["body"], "message 5");
    assert_eq!(messages[99]["body"], "message 104");
    let first = ids(&body)[0];
    let (_, body) = app.get(&format!("{path}&after_id=0")).await;
    assert_eq!(body["messages"].as_array().unwrap().len(), 100, "after_id pages hold at most 100");
    assert_eq!(body["messages"][0]["body"], "message 0");
    let (_, body) = app.get(&format!("{path}&after_id={}", first - 1)).await;
    assert_eq!(body["messages"][0]["body"], "message 5");
}

#[tokio::test]
async fn query_parameters_are_validated() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api", &f.token, "ann", "hi").await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/widget/conversations/{public_id}/messages");
        let (status, body) = app.get(&path).await;
        assert_fields(status, &body, &["token"]);
        for bad in ["-1", "abc", "1.5", ""] {
            let (status, body) = app.get(&format!("{path}?token={}&after_id={bad}", f.token)).await;
            assert_fields(status, &body, &["after_id"]);
        }
    }
}

#[tokio::test]
async fn post_validates_the_body() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api", &f.token, "ann", "hi").await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/widget/conversations/{public_id}/messages");
        let (status, body) = app.post(&path, json!({})).await;
        assert_fields(status, &body, &["body", "token"]);
        let (status, body) = app.post(&path, json!({"token": f.token, "body": "   ", "current_url": 12})).await;
        assert_fields(status, &body, &["body", "current_url"]);
        let (status, body) = app.post(&path, json!({"token": f.token, "body": "é".repeat(5001)})).await;
        assert_fields(status, &body, &["body"]);
        let (status, _) = app.post(&path, json!({"token": f.token, "body": "é".repeat(5000)})).await;
        assert_eq!(status, StatusCode::CREATED, "5,000 characters is the limit, not 5,000 bytes");
    }
}

#[tokio::test]
async fn another_sites_or_tenants_conversation_is_not_found() {
    let app = TestApp::spawn().await;
    let acme = app.fixture("acme", &[]).await;
    let acme_blog = app.site("acme", acme.scope.tenant, &[]).await;
    let globex = app.fixture("globex", &[]).await;
    let public_id = app.open_conversation("/api", &acme.token, "ann", "private words").await;
    for prefix in PREFIXES {
        for other in [&acme_blog.token, &globex.token] {
            let (status, body) = app.get(&format!("{prefix}/widget/conversations/{public_id}/messages?token={other}")).await;
            assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
            assert!(!body.to_string().contains("private words"));
            let (status, body) = app.post_message(prefix, other, &public_id, "intrusion").await;
            assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
        }
        let (status, unknown) = app.get(&format!("{prefix}/widget/conversations/conv_nope/messages?token={}", acme.token)).await;
        assert_error(status, &unknown, StatusCode::NOT_FOUND, "not_found");
        let (status, body) = app.get(&format!("{prefix}/widget/conversations/{public_id}/messages?token=inst_nope")).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    let (_, body) = app.get(&format!("/api/widget/conversations/{public_id}/messages?token={}", acme.token)).await;
    assert_eq!(body["messages"].as_array().unwrap().len(), 1, "the refused posts wrote nothing");
}

#[tokio::test]
async fn message_posts_are_rate_limited_per_conversation() {
    let app = TestApp::with().var("PARLEY_RATE_LIMITS", "on").var("PARLEY_RATE_LIMIT_CONVERSATION_MESSAGES", "3/1h").start().await;
    let f = app.fixture("acme", &[]).await;
    let busy = app.open_conversation("/api", &f.token, "ann", "hi").await;
    let quiet = app.open_conversation("/api", &f.token, "bob", "hi").await;
    for _ in 0..3 {
        let (status, _) = app.post_message("/api", &f.token, &busy, "again").await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let res = app
        .client
        .post(app.url(&format!("/api/v1/widget/conversations/{busy}/messages")))
        .json(&json!({"token": f.token, "body": "too many"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = res.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=3600).contains(&retry), "{retry}");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limited");
    let (status, _) = app.post_message("/api", &f.token, &quiet, "still fine").await;
    assert_eq!(status, StatusCode::CREATED, "other conversations are not affected");
    let (_, body) = app.get(&format!("/api/widget/conversations/{busy}/messages?token={}", f.token)).await;
    assert_eq!(body["messages"].as_array().unwrap().len(), 4, "the refused message was not stored");
}

#[tokio::test]
async fn widget_writes_are_rate_limited_per_installation_and_address() {
    let app = TestApp::with().var("PARLEY_RATE_LIMITS", "on").var("PARLEY_RATE_LIMIT_WIDGET_WRITES", "2/1h").start().await;
    let f = app.fixture("acme", &[]).await;
    let other = app.fixture("globex", &[]).await;
    for _ in 0..2 {
        let (status, _) = app.post("/api/widget/ping", json!({"token": f.token})).await;
        assert_eq!(status, StatusCode::OK);
    }
    let (status, body) = app.post("/api/widget/visitors", json!({"token": f.token, "uuid": "v"})).await;
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    let (status, _) = app.post("/api/widget/ping", json!({"token": other.token})).await;
    assert_eq!(status, StatusCode::OK, "another installation has its own budget");
    let (status, _) = app.get(&format!("/api/widget/config/{}", f.token)).await;
    assert_eq!(status, StatusCode::OK, "reads are not limited by the write budget");
}

/// A page address loses its fragment (where single-page apps keep sign-in
/// tokens) before it is stored, whatever client sent it.
#[tokio::test]
async fn page_addresses_are_kept_without_their_fragment() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api", &f.token, "ann", "hello").await;
    let (status, body) = app
        .post(
            &format!("/api/widget/conversations/{public_id}/messages"),
            serde_json::json!({"token": f.token, "body": "hi", "current_url": "https://shop.example/account?tab=2#access_token=secret"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{body}");
    let admin = app.login("admin@acme.example.com").await;
    let (_, list) = app.authed(reqwest::Method::GET, "/api/v1/mobile/conversations", &admin, None).await;
    assert_eq!(list["conversations"][0]["visitor"]["current_url"], "https://shop.example/account?tab=2");
}

/// A poll that is up to date is answered from memory; every change the
/// visitor can see is in the very next poll, whoever made it, and the
/// memory answers nobody the database would refuse.
#[tokio::test]
async fn an_up_to_date_poll_hears_every_change_at_once_and_only_its_visitor_is_answered() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let other_site = app.site("acme-shop", f.scope.tenant, &[]).await;
    let globex = app.fixture("globex", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "ann", "hello").await;
    let poll = |token: &str, after: i64| format!("/api/widget/conversations/{public_id}/messages?token={token}&after_id={after}");
    let (_, body) = app.get(&format!("/api/widget/conversations/{public_id}/messages?token={}", f.token)).await;
    let mut latest = *ids(&body).last().expect("the first message");
    let (_, inbox) = app.authed(reqwest::Method::GET, "/api/mobile/conversations", &admin, None).await;
    let id = inbox["conversations"][0]["id"].as_i64().expect("the conversation");
    let mobile = |what: &str| format!("/api/mobile/conversations/{id}/{what}");

    for _ in 0..3 {
        let (status, again) = app.get(&poll(&f.token, latest)).await;
        assert_eq!(status, StatusCode::OK, "{again}");
        assert_eq!((ids(&again), &again["cursor"]), (vec![], &body["cursor"]), "nothing new, and the same cursor");
    }
    // Another site's or tenant's installation cannot reach it, remembered or not.
    for token in [&other_site.token, &globex.token] {
        let (status, body) = app.get(&poll(token, latest)).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }

    // An operator's reply, taking it with a note the visitor never sees,
    // the visitor's own message, a close: each polled at once after its
    // answer.
    let (status, reply) = app.authed(reqwest::Method::POST, &mobile("messages"), &admin, Some(json!({"body": "Hi Ann"}))).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let (_, body) = app.get(&poll(&f.token, latest)).await;
    assert_eq!(ids(&body), [reply["message"]["id"].as_i64().expect("the reply's id")]);
    latest = ids(&body)[0];
    let (_, me) = app.authed(reqwest::Method::GET, "/api/mobile/me", &admin, None).await;
    app.transfer_with_note(&admin, id, me["user"]["id"].clone(), "VIP, be nice").await;
    let (_, body) = app.get(&poll(&f.token, latest)).await;
    assert_eq!(ids(&body), Vec::<i64>::new(), "the note is for operators");
    assert_eq!(body["conversation"]["status"], "assigned", "taking it is shown");
    let (_, own) = app.post_message("/api", &f.token, &public_id, "thanks").await;
    let (_, body) = app.get(&poll(&f.token, latest)).await;
    assert_eq!(ids(&body), [own["message"]["id"].as_i64().expect("the message's id")]);
    latest = ids(&body)[0];
    let (_, before) = app.get(&poll(&f.token, latest)).await;
    assert_eq!(before["conversation"]["status"], "assigned");
    assert_eq!(app.authed(reqwest::Method::POST, &mobile("close"), &admin, None).await.0, StatusCode::OK);
    let (_, body) = app.get(&poll(&f.token, latest)).await;
    assert_eq!(body["conversation"]["status"], "closed");
    assert_ne!(body["cursor"], before["cursor"], "the close moved the cursor");

    // Erased: gone at once, though the poll was answered from memory just before.
    assert_eq!(app.get(&poll(&f.token, latest)).await.0, StatusCode::OK);
    let (status, _) = app.authed(reqwest::Method::DELETE, &format!("/api/admin/conversations/{id}"), &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = app.get(&poll(&f.token, latest)).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
}
