//! The widget in the visitor's language and the site's hours: the
//! configuration's words, direction and site texts for the browser's
//! languages or the site's own; `online` and `next_open_at` from the
//! site's business hours in its time zone; one automatic reply per
//! conversation outside them; and what `PATCH admin/sites/{id}` refuses.

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

async fn config(app: &TestApp, token: &str, lang: &str) -> Value {
    let (status, body) = app.get(&format!("/api/v1/widget/config/{token}?lang={lang}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

async fn patch_site(app: &TestApp, admin: &str, site: i64, body: Value) -> (StatusCode, Value) {
    app.authed(Method::PATCH, &format!("/api/v1/admin/sites/{site}"), admin, Some(body)).await
}

#[tokio::test]
async fn the_browser_or_the_site_chooses_the_language_and_its_texts() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let site = f.scope.site.0;

    let english = config(&app, &f.token, "sv-SE,fi").await;
    assert_eq!((english["locale"].as_str(), english["direction"].as_str()), (Some("en"), Some("ltr")));
    assert_eq!(english["strings"]["send"], "Send");
    assert!(english["strings"].get("auto_reply").is_none(), "what only the server writes stays there");
    let german = config(&app, &f.token, "de-AT,de;q=0.9,en").await;
    assert_eq!(german["locale"], "de");
    assert_ne!(german["strings"]["send"], "Send", "German words: {}", german["strings"]);
    let arabic = config(&app, &f.token, "ar-EG").await;
    assert_eq!((arabic["locale"].as_str(), arabic["direction"].as_str()), (Some("ar"), Some("rtl")));

    // The site's texts in German; the rest stays the default.
    let (status, body) =
        patch_site(&app, &admin, site, json!({"texts": {"de": {"title": "Hilfe", "greeting": "Hallo! Wie können wir helfen?"}}})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["site"]["texts"]["de"]["title"], "Hilfe");
    let german = config(&app, &f.token, "de").await;
    assert_eq!(german["site"]["widget"]["title"], "Hilfe");
    assert_eq!(german["site"]["widget"]["greeting"], "Hallo! Wie können wir helfen?");
    assert_eq!(german["site"]["widget"]["privacy_text"], english["site"]["widget"]["privacy_text"], "not given: the default");
    assert_ne!(config(&app, &f.token, "fr").await["site"]["widget"]["title"], "Hilfe");

    // A site language wins over the browser's; auto gives it back.
    let (status, body) = patch_site(&app, &admin, site, json!({"locale": "he"})).await;
    assert_eq!((status, body["site"]["locale"].as_str()), (StatusCode::OK, Some("he")));
    let hebrew = config(&app, &f.token, "de").await;
    assert_eq!((hebrew["locale"].as_str(), hebrew["direction"].as_str()), (Some("he"), Some("rtl")));
    assert_eq!(hebrew["site"]["texts"], Value::Null, "the widget gets its language's texts only");
    patch_site(&app, &admin, site, json!({"locale": "auto"})).await;
    assert_eq!(config(&app, &f.token, "de").await["locale"], "de");

    // What cannot be kept is refused, each field named, and changes nothing.
    for (body, field) in [
        (json!({}), "locale"),
        (json!({"locale": "xx"}), "locale"),
        (json!({"locale": 5}), "locale"),
        (json!({"texts": {"xx": {"title": "?"}}}), "texts"),
        (json!({"texts": {"de": {"colour": "red"}}}), "texts"),
        (json!({"texts": {"de": {"title": "a\u{7}b"}}}), "texts"),
        (json!({"texts": ["de"]}), "texts"),
        (json!({"business_hours": {"time_zone": "Mars/Base", "weekly": []}}), "business_hours"),
        (
            json!({"business_hours": {"time_zone": "Europe/Berlin", "weekly": [{"day": "monday", "open": "17:00", "close": "09:00"}]}}),
            "business_hours",
        ),
        (
            json!({"business_hours": {"time_zone": "Europe/Berlin", "weekly": [{"day": "someday", "open": "09:00", "close": "17:00"}]}}),
            "business_hours",
        ),
        (json!({"business_hours": {"time_zone": "Europe/Berlin", "weekly": [], "closed_dates": ["2026-02-30"]}}), "business_hours"),
        (json!({"business_hours": {"weekly": []}}), "business_hours"),
        (json!({"business_hours": "always"}), "business_hours"),
    ] {
        let (status, answer) = patch_site(&app, &admin, site, body.clone()).await;
        assert_fields(status, &answer, &[field]);
    }
    let (status, body) = app.get(&format!("/api/v1/widget/config/{}?lang=de%00", f.token)).await;
    assert_fields(status, &body, &["lang"]);
    assert_eq!(config(&app, &f.token, "de").await["site"]["widget"]["title"], "Hilfe", "nothing changed");
}

/// Acme's site with weekday hours in Berlin, and the test clock's time
/// zone offset checked against it.
async fn with_hours(app: &TestApp, admin: &str, site: i64) {
    let hours = json!({"time_zone": "Europe/Berlin", "weekly": [
        {"day": "monday", "open": "09:00", "close": "17:00"},
        {"day": "tuesday", "open": "09:00", "close": "17:00"},
        {"day": "wednesday", "open": "09:00", "close": "17:00"},
        {"day": "thursday", "open": "09:00", "close": "17:00"},
        {"day": "friday", "open": "09:00", "close": "17:00"}
    ], "closed_dates": ["2026-12-24"]});
    let (status, body) = patch_site(app, admin, site, json!({"business_hours": hours})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

fn set_clock(app: &TestApp, rfc3339: &str) {
    let ms = rfc3339.parse::<jiff::Timestamp>().unwrap().as_millisecond();
    app.clock.set(parley_domain::Timestamp::from_millis(ms));
}

#[tokio::test]
async fn business_hours_tell_when_the_team_is_back_and_reply_once_outside_them() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    with_hours(&app, &admin, f.scope.site.0).await;

    // Wednesday 25 November 2026, 10:00 in Berlin (UTC+1): open.
    set_clock(&app, "2026-11-25T09:00:00Z");
    let open = config(&app, &f.token, "en").await;
    assert_eq!((open["online"].as_bool(), &open["next_open_at"]), (Some(true), &Value::Null));
    // Friday 27 November, 18:00 there: back on Monday at 09:00 (08:00 UTC).
    set_clock(&app, "2026-11-27T17:00:00Z");
    let closed = config(&app, &f.token, "de").await;
    assert_eq!(closed["online"], false);
    assert_eq!(closed["next_open_at"], "2026-11-30T08:00:00.000Z");
    // Christmas Eve is a Thursday, closed: back on Friday the 25th.
    set_clock(&app, "2026-12-24T10:00:00Z");
    assert_eq!(config(&app, &f.token, "en").await["next_open_at"], "2026-12-25T08:00:00.000Z");

    // A German visitor writes on Friday evening: one automatic reply, in German.
    set_clock(&app, "2026-11-27T17:00:00Z");
    let (status, _) = app.post("/api/v1/widget/visitors", json!({"token": f.token, "uuid": "v-de", "locale": "de"})).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, opened) = app
        .post(
            "/api/v1/widget/conversations",
            json!({"token": f.token, "visitor_uuid": "v-de", "message": "Hallo?", "privacy_accepted": true}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{opened}");
    let public_id = opened["conversation"]["public_id"].as_str().unwrap().to_owned();
    let (status, _) = app.post_message("/api/v1", &f.token, &public_id, "Noch jemand da?").await;
    assert_eq!(status, StatusCode::CREATED);
    let (_, read) = app.get(&format!("/api/v1/widget/conversations/{public_id}/messages?token={}", f.token)).await;
    let messages = read["messages"].as_array().unwrap();
    let system: Vec<&Value> = messages.iter().filter(|m| m["sender"]["type"] == "system").collect();
    assert_eq!(system.len(), 1, "one automatic reply: {messages:?}");
    let reply = system[0]["body"].as_str().unwrap();
    assert!(reply.contains("2026-11-30 09:00 (Europe/Berlin)"), "when, on the site's clock: {reply}");
    assert_ne!(reply, parley_domain::locale::text("en", "auto_reply", &[("when", "2026-11-30 09:00 (Europe/Berlin)")]), "in German");
    assert_eq!(messages[1]["id"], system[0]["id"], "right after the first message");

    // Once an operator has answered, the next message outside the hours
    // is told again.
    set_clock(&app, "2026-11-27T17:30:00Z");
    let admin = app.login("admin@acme.example.com").await;
    let (_, list) = app.authed(Method::GET, "/api/v1/mobile/conversations", &admin, None).await;
    let id = list["conversations"][0]["id"].as_i64().unwrap();
    app.authed(Method::POST, &format!("/api/v1/mobile/conversations/{id}/messages"), &admin, Some(json!({"body": "Morgen!"}))).await;
    set_clock(&app, "2026-11-27T18:00:00Z");
    app.post_message("/api/v1", &f.token, &public_id, "Danke").await;
    let (_, read) = app.get(&format!("/api/v1/widget/conversations/{public_id}/messages?token={}", f.token)).await;
    let replies = read["messages"].as_array().unwrap().iter().filter(|m| m["sender"]["type"] == "system").count();
    assert_eq!(replies, 2, "{read}");

    // During the hours nothing is added.
    set_clock(&app, "2026-11-30T09:00:00Z");
    let during = app.open_conversation("/api/v1", &f.token, "v-en", "Good morning").await;
    let (_, read) = app.get(&format!("/api/v1/widget/conversations/{during}/messages?token={}", f.token)).await;
    assert_eq!(read["messages"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn another_tenant_and_an_agent_cannot_change_a_site() {
    let app = TestApp::spawn().await;
    let acme = app.fixture("acme", &[]).await;
    app.fixture("globex", &[]).await;
    app.operator(&acme, "agent@acme.example", Role::Agent, &[acme.scope.site]).await;
    let globex = app.login("admin@globex.example.com").await;
    let agent = app.login("agent@acme.example").await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/admin/sites/{}", acme.scope.site.0);
        let (status, body) = app.authed(Method::PATCH, &path, &globex, Some(json!({"locale": "de"}))).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
        let (status, body) = app.authed(Method::PATCH, &path, &agent, Some(json!({"locale": "de"}))).await;
        assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
        let (status, body) = app.send(Method::PATCH, &path, Some(json!({"locale": "de"})), &[]).await;
        assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
    }
    assert_eq!(config(&app, &acme.token, "en").await["locale"], "en", "unchanged");
}
