//! The live streams (`text/event-stream`): a visitor following its
//! conversation and an operator following everything it can see, resumed
//! with `Last-Event-ID` after a drop, a restart or through another
//! instance, with nothing lost and nothing repeated; who sees what; the
//! cursors that get a `reset`; keep-alives, the per-address limit, the end
//! of an operator's stream with its token, and shutdown.

use std::time::Duration;

use parley_domain::model::{Role, SiteId};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::sse::{self, EventStream, Frame};

type Event = (Option<String>, String, Value);

/// The conversation's messages cursor: where its stream starts.
async fn messages_cursor(app: &TestApp, prefix: &str, token: &str, public_id: &str) -> String {
    let (status, body) = app.get(&format!("{prefix}/widget/conversations/{public_id}/messages?token={token}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["cursor"].as_str().expect("cursor").to_owned()
}

fn widget_stream_path(prefix: &str, public_id: &str, token: &str, last_event_id: Option<&str>) -> String {
    let after = last_event_id.map(|c| format!("&last_event_id={c}")).unwrap_or_default();
    format!("{prefix}/widget/conversations/{public_id}/events?token={token}{after}")
}

/// The id of the tenant's only (or newest) conversation, for operators.
async fn conversation_id(app: &TestApp, token: &str) -> i64 {
    let (status, list) = app.authed(Method::GET, "/api/mobile/conversations", token, None).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    list["conversations"][0]["id"].as_i64().expect("a conversation")
}

async fn reply(app: &TestApp, token: &str, id: i64, text: &str) {
    let (status, body) =
        app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/messages"), token, Some(json!({"body": text}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

async fn operator_stream(app: &TestApp, token: &str, headers: &[(&str, &str)]) -> EventStream {
    let auth = format!("Bearer {token}");
    let mut all = vec![("authorization", auth.as_str())];
    all.extend_from_slice(headers);
    sse::open_ok(app, "/api/mobile/events", &all).await
}

/// A visitor's conversation, opened with "hello", and the admin who
/// answers it: where the resume tests start.
struct Opened {
    app: TestApp,
    f: Fixture,
    /// The admin's bearer token.
    admin: String,
    public_id: String,
    /// The conversation's messages cursor, as the widget follows from it.
    start: String,
    /// The conversation's id for operators.
    id: i64,
}

impl Opened {
    async fn new() -> Self {
        let app = TestApp::spawn().await;
        let f = app.fixture("acme", &[]).await;
        let admin = app.login("admin@acme.example.com").await;
        let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
        let start = messages_cursor(&app, "/api", &f.token, &public_id).await;
        let id = conversation_id(&app, &admin).await;
        Self { app, f, admin, public_id, start, id }
    }
}

/// Events until one whose message body is `last` (included).
async fn until_message(stream: &mut EventStream, last: &str) -> Vec<Event> {
    let mut seen = Vec::new();
    loop {
        let event = stream.event().await.unwrap_or_else(|| panic!("the stream ended before {last:?}: {seen:?}"));
        let done = event.2["message"]["body"] == last;
        seen.push(event);
        if done {
            return seen;
        }
    }
}

fn bodies(events: &[Event]) -> Vec<String> {
    events.iter().filter_map(|e| e.2["message"]["body"].as_str().map(str::to_owned)).collect()
}

fn kinds(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.1.as_str()).collect()
}

/// Every stream writes a first line when it opens, long before its first
/// keep-alive: a proxy that holds a response's headers until the first
/// bytes of its body (nginx before 1.23, over HTTP/2) would otherwise
/// delay the opening past what a widget waits for.
#[tokio::test]
async fn every_stream_says_at_once_that_it_is_open() {
    let app = TestApp::with().var("PARLEY_STREAM_KEEPALIVE", "1h").start().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    let cursor = messages_cursor(&app, "/api", &f.token, &public_id).await;
    let mut widget = sse::open_ok(&app, &widget_stream_path("/api/v1", &public_id, &f.token, Some(&cursor)), &[]).await;
    let mut operator = operator_stream(&app, &admin, &[]).await;
    for stream in [&mut widget, &mut operator] {
        let first = stream.raw_frame_within(Duration::from_secs(5)).await;
        assert_eq!(first, Ok(Some(Frame::Comment("open".into()))));
    }
}

#[tokio::test]
async fn a_visitor_follows_its_conversation_live_from_the_cursor_of_its_messages() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let agent_id = app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    for prefix in PREFIXES {
        let public_id = app.open_conversation(prefix, &f.token, &format!("visitor{prefix}"), "hello").await;
        let cursor = messages_cursor(&app, prefix, &f.token, &public_id).await;
        let mut stream = sse::open_ok(&app, &widget_stream_path(prefix, &public_id, &f.token, Some(&cursor)), &[]).await;
        assert!(stream.content_type.starts_with("text/event-stream"), "{}", stream.content_type);

        let id = conversation_id(&app, &admin).await;
        app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/assign"), &admin, None).await;
        reply(&app, &admin, id, "how can I help?").await;
        app.transfer_with_note(&admin, id, json!(agent_id), "an operator-only note").await;
        app.post_message(prefix, &f.token, &public_id, "my order").await;
        app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/close"), &admin, None).await;
        app.post_message(prefix, &f.token, &public_id, "one more thing").await;

        // On PostgreSQL the cursor may trail what the read showed (an
        // entry is readable once older transactions end), so the first
        // message may come again; clients know it by its id.
        let events: Vec<Event> =
            until_message(&mut stream, "one more thing").await.into_iter().filter(|e| e.2["message"]["body"] != "hello").collect();
        assert_eq!(events[0].1, "conversation.updated", "{events:?}");
        assert_eq!(events[0].2, json!({"conversation": events[0].2["conversation"].clone()}), "only the conversation");
        assert_eq!(events[0].2["conversation"]["public_id"], public_id.as_str());
        let texts = bodies(&events);
        assert!(texts.contains(&"how can I help?".to_owned()) && texts.contains(&"my order".to_owned()), "{texts:?}");
        assert!(!texts.contains(&"an operator-only note".to_owned()), "a note never reaches the visitor: {texts:?}");
        assert!(!kinds(&events).contains(&"conversation.created"), "operators only");
        let message = events.iter().find(|e| e.2["message"]["body"] == "my order").unwrap();
        assert_eq!(message.2["message"]["sender"]["type"], "visitor");
        assert!(message.2["message"]["id"].is_i64() && message.2.get("conversation").is_none(), "{}", message.2);
        // Each change comes as an event; its `conversation` is as it is
        // when read (a stream that reads late shows the latest state).
        let updates: Vec<&str> =
            events.iter().filter(|e| e.1 == "conversation.updated").filter_map(|e| e.2["conversation"]["status"].as_str()).collect();
        assert!(updates.len() >= 3, "assigned, closed, reopened (a transfer changes nothing the visitor sees): {updates:?}");
        // Every event carries its own cursor, each one new.
        let ids: Vec<&str> = events.iter().map(|e| e.0.as_deref().expect("id")).collect();
        let unique: std::collections::HashSet<&&str> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len(), "{ids:?}");
    }
}

#[tokio::test]
async fn a_resumed_stream_replays_what_it_missed_once_and_the_header_wins_over_the_query() {
    let Opened { app, f, admin, public_id, start, id } = Opened::new().await;
    let path = widget_stream_path("/api/v1", &public_id, &f.token, Some(&start));

    let mut stream = sse::open_ok(&app, &path, &[]).await;
    reply(&app, &admin, id, "one").await;
    // (The opening message may come again first: see the test above.)
    let one = until_message(&mut stream, "one").await.pop().expect("one");
    drop(stream);

    reply(&app, &admin, id, "two").await;
    app.post_message("/api", &f.token, &public_id, "three").await;
    let last = one.0.unwrap();
    let mut resumed = sse::open_ok(&app, &path, &[("last-event-id", &last)]).await;
    let missed = resumed.events(2).await;
    assert_eq!(bodies(&missed), ["two", "three"], "what came while away, and not `one` again");
    reply(&app, &admin, id, "four").await;
    assert_eq!(bodies(&resumed.events(1).await), ["four"], "then live");

    // The query parameter alone replays from its cursor too.
    let two = missed[0].0.clone().unwrap();
    let mut from_query = sse::open_ok(&app, &widget_stream_path("/api", &public_id, &f.token, Some(&two)), &[]).await;
    assert_eq!(bodies(&from_query.events(2).await), ["three", "four"]);
}

/// More than a page (100 entries) written while a visitor was away comes
/// back whole and in order when its stream resumes, then live ones.
#[tokio::test]
async fn a_resume_replays_more_than_a_page_in_order() {
    let Opened { app, f, admin, public_id, start, id } = Opened::new().await;
    let sent: Vec<String> = (0..130).map(|n| format!("reply {n}")).collect();
    for text in &sent {
        reply(&app, &admin, id, text).await;
    }
    let mut stream = sse::open_ok(&app, &widget_stream_path("/api", &public_id, &f.token, Some(&start)), &[]).await;
    let replayed = until_message(&mut stream, "reply 129").await;
    let mut got = bodies(&replayed);
    // (The opening message may come again first: see
    // `a_visitor_follows_its_conversation_live_from_the_cursor_of_its_messages`.)
    got.retain(|b| b != "hello");
    assert_eq!(got, sent, "every one, once, in order");
    reply(&app, &admin, id, "live").await;
    assert_eq!(bodies(&until_message(&mut stream, "live").await), ["live"]);
}

#[tokio::test]
async fn unknown_expired_and_foreign_cursors_get_one_reset_and_the_stream_ends() {
    let app = TestApp::with().var("PARLEY_EVENT_RETENTION", "1d").start().await;
    let f = app.fixture("acme", &[]).await;
    let other = app.fixture("globex", &[]).await;
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    let other_id = app.open_conversation("/api", &other.token, "v2", "hello").await;
    // Cursors of entries (on PostgreSQL, once the openings are readable;
    // before that the read answers the start of the feed).
    let entry_cursor = |fixture: Fixture, id: String| {
        let app = &app;
        async move {
            eventually(|| async {
                let text = messages_cursor(app, "/api", &fixture.token, &id).await;
                let opened = app.open_visitor_cursor(&fixture, &id, &text).await.expect("a cursor of this conversation");
                (!opened.is_start()).then_some(text)
            })
            .await
        }
    };
    let cursor = entry_cursor(f.clone(), public_id.clone()).await;
    let foreign = entry_cursor(other.clone(), other_id.clone()).await;
    // Well formed, but not sealed by this service for this conversation.
    let unknown = {
        let mut bytes = cursor.clone().into_bytes();
        bytes[10] = if bytes[10] == b'A' { b'B' } else { b'A' };
        String::from_utf8(bytes).unwrap()
    };
    assert!(app.open_visitor_cursor(&f, &public_id, &unknown).await.is_none());
    assert!(app.open_visitor_cursor(&f, &public_id, &foreign).await.is_none(), "another conversation's cursor opens only there");

    let path = widget_stream_path("/api", &public_id, &f.token, None);
    let garbage = [("last-event-id", "not a cursor")];
    let unknown_header = [("last-event-id", unknown.as_str())];
    let foreign_header = [("last-event-id", foreign.as_str())];
    for headers in [&garbage[..], &unknown_header, &foreign_header] {
        let mut stream = sse::open_ok(&app, &path, headers).await;
        assert_eq!(stream.frame().await, Some(Frame::Event { id: None, event: "reset".into(), data: json!({}) }), "{headers:?}");
        assert_eq!(stream.frame().await, None, "and the stream ends");
    }
    // In the query too; and a plain cursor, as releases before sealing
    // gave visitors (or an operator's), is well formed but never a
    // visitor's: a widget loaded before an upgrade reloads.
    for query in [unknown.as_str(), foreign.as_str(), "0-1-mjuohs00"] {
        let mut stream = sse::open_ok(&app, &widget_stream_path("/api", &public_id, &f.token, Some(query)), &[]).await;
        assert_eq!(stream.frame().await, Some(Frame::Event { id: None, event: "reset".into(), data: json!({}) }), "{query}");
        assert_eq!(stream.frame().await, None, "and the stream ends");
    }

    app.clock.advance(Duration::from_secs(86_400 + 1));
    app.post_message("/api", &f.token, &public_id, "a day later").await;
    // Older than the retention and, once the new entry is readable (on
    // PostgreSQL a moment after its commit), no longer the head.
    let mut stream = eventually(|| async {
        let mut stream = sse::open_ok(&app, &widget_stream_path("/api", &public_id, &f.token, Some(&cursor)), &[]).await;
        match stream.frame().await {
            Some(Frame::Event { event, .. }) if event == "reset" => Some(stream),
            _ => None,
        }
    })
    .await;
    assert_eq!(stream.frame().await, None, "and the stream ends");

    // A quiet conversation's cursor, however old its entry, is the head:
    // served, not reset.
    app.clock.advance(Duration::from_secs(86_400 + 1));
    eventually(|| async {
        let head = messages_cursor(&app, "/api", &f.token, &public_id).await;
        let mut quiet = sse::open_ok(&app, &widget_stream_path("/api", &public_id, &f.token, Some(&head)), &[]).await;
        match quiet.frame_within(Duration::from_millis(300)).await {
            Err(()) => Some(()),
            // On PostgreSQL the head may not be readable yet: look again.
            Ok(Some(Frame::Event { event, .. })) if event == "reset" => None,
            other => panic!("a quiet cursor's stream stays open and silent: {other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn a_widget_stream_refuses_what_the_messages_refuse() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &["shop.example.com"]).await;
    let second_site = app.site("acme-eu", f.scope.tenant, &[]).await;
    let other = app.fixture("globex", &[]).await;
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    let origin = [("origin", "https://shop.example.com")];

    let refused = |path: String, headers: Vec<(&'static str, &'static str)>| {
        let app = &app;
        async move {
            match sse::open(app, &path, &headers).await {
                Ok(_) => panic!("{path} was accepted"),
                Err(refusal) => refusal,
            }
        }
    };
    let (status, body) = refused(format!("/api/widget/conversations/{public_id}/events"), origin.to_vec()).await;
    assert_fields(status, &body, &["token"]);
    let (status, body) =
        refused(format!("/api/widget/conversations/{public_id}/events?token={}&last_event_id=x-y", f.token), origin.to_vec()).await;
    assert_fields(status, &body, &["last_event_id"]);
    let (status, body) = refused(widget_stream_path("/api", &public_id, "wt_unknown_token_0000000000", None), origin.to_vec()).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    for token in [&second_site.token, &other.token] {
        let (status, body) = refused(widget_stream_path("/api", &public_id, token, None), vec![]).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    let (status, body) = refused(widget_stream_path("/api", "nope", &f.token, None), origin.to_vec()).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    let (status, body) = refused(widget_stream_path("/api", &public_id, &f.token, None), vec![("origin", "https://evil.example")]).await;
    assert_error(status, &body, StatusCode::FORBIDDEN, "origin_not_allowed");
    sse::open_ok(&app, &widget_stream_path("/api", &public_id, &f.token, None), &origin).await;
}

#[tokio::test]
async fn quiet_streams_get_keep_alives_and_an_address_holds_only_its_share() {
    let app = TestApp::with()
        .var("PARLEY_STREAM_KEEPALIVE", "100ms")
        .var("PARLEY_STREAMS_PER_ADDRESS", "2")
        .var("PARLEY_METRICS_TOKEN", METRICS_TOKEN)
        .start()
        .await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    let path = widget_stream_path("/api", &public_id, &f.token, None);

    let mut first = sse::open_ok(&app, &path, &[]).await;
    // (On PostgreSQL the opening message may come first: see above.)
    let mut frame = first.frame().await;
    while matches!(&frame, Some(Frame::Event { event, .. }) if event == "message.created") {
        frame = first.frame().await;
    }
    assert_eq!(frame, Some(Frame::Comment("keep-alive".into())));
    let _second = operator_stream(&app, &admin, &[]).await;
    let Err((status, body)) = sse::open(&app, &path, &[]).await else { panic!("a third stream was accepted") };
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    assert!(body["retry_after"].as_str().is_some_and(|s| s.parse::<u64>().is_ok()), "{body}");
    let (status, _) = app.get(&format!("/api/widget/conversations/{public_id}/messages?token={}", f.token)).await;
    assert_eq!(status, StatusCode::OK, "other requests are not limited");
    assert_eq!(gauge(&scrape_metrics(&app).await, "parley_streams_open"), 2.0, "the refused one is not counted");

    drop(first);
    let _third = eventually(|| async { sse::open(&app, &path, &[]).await.ok() }).await;
    drop(_second);
    eventually(|| async { (gauge(&scrape_metrics(&app).await, "parley_streams_open") == 1.0).then_some(()) }).await;
}

#[tokio::test]
async fn an_operator_stream_carries_what_the_operator_may_see_notes_included() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let eu = app.site("acme-eu", f.scope.tenant, &[]).await;
    let other = app.fixture("globex", &[]).await;
    let agent_id = app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    app.operator(&f, "eu@acme.example.com", Role::Agent, &[eu.scope.site]).await;
    let (admin, agent, eu_agent, globex) = (
        app.login("admin@acme.example.com").await,
        app.login("agent@acme.example.com").await,
        app.login("eu@acme.example.com").await,
        app.login("admin@globex.example.com").await,
    );
    let mut streams = Vec::new();
    for token in [&admin, &agent, &eu_agent, &globex] {
        streams.push(operator_stream(&app, token, &[]).await);
    }

    app.open_conversation("/api", &f.token, "v1", "on the main site").await;
    app.open_conversation("/api", &other.token, "v2", "at globex").await;
    let id = conversation_id(&app, &agent).await;
    app.transfer_with_note(&admin, id, json!(agent_id), "VIP, be nice").await;
    app.open_conversation("/api", &eu.token, "v3", "on the eu site").await;
    app.open_conversation("/api", &other.token, "v4", "the end").await;

    let admin_sees = until_message(&mut streams[0], "on the eu site").await;
    assert_eq!(&kinds(&admin_sees)[..2], ["conversation.created", "message.created"]);
    assert_eq!(admin_sees[0].2["conversation"]["id"], id, "the mobile shape: {}", admin_sees[0].2);
    let texts = bodies(&admin_sees);
    assert!(texts.contains(&"VIP, be nice".to_owned()), "notes reach operators: {texts:?}");
    assert!(!texts.contains(&"at globex".to_owned()), "never another tenant's: {texts:?}");
    let note = admin_sees.iter().find(|e| e.2["message"]["body"] == "VIP, be nice").unwrap();
    assert_eq!(note.2["message"]["internal"], true);

    let agent_sees = until_message(&mut streams[1], "VIP, be nice").await;
    assert!(bodies(&agent_sees).contains(&"on the main site".to_owned()));
    let eu_sees = streams[2].events(2).await;
    assert_eq!(bodies(&eu_sees), ["on the eu site", "on the eu site"], "an agent without the site sees only its own: {eu_sees:?}");
    let globex_sees = until_message(&mut streams[3], "the end").await;
    assert_eq!(bodies(&globex_sees), ["at globex", "at globex", "the end"]);
}

#[tokio::test]
async fn an_agent_removed_from_a_site_stops_receiving_its_events() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let eu = app.site("acme-eu", f.scope.tenant, &[]).await;
    let agent_id = app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site, eu.scope.site]).await;
    let (admin, agent) = (app.login("admin@acme.example.com").await, app.login("agent@acme.example.com").await);
    let mut stream = operator_stream(&app, &agent, &[]).await;
    app.open_conversation("/api", &f.token, "v1", "first").await;
    assert_eq!(bodies(&stream.events(2).await), ["first", "first"]);

    let eu_site: SiteId = eu.scope.site;
    let (status, body) =
        app.authed(Method::PATCH, &format!("/api/admin/operators/{agent_id}"), &admin, Some(json!({"site_ids": [eu_site.0]}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    app.open_conversation("/api", &f.token, "v2", "no longer yours").await;
    app.open_conversation("/api", &eu.token, "v3", "still yours").await;
    assert_eq!(bodies(&stream.events(2).await), ["still yours", "still yours"]);
}

#[tokio::test]
async fn an_operator_stream_ends_when_its_role_changes() {
    let app = TestApp::with().var("PARLEY_STREAM_KEEPALIVE", "100ms").start().await;
    let f = app.fixture("acme", &[]).await;
    let boss_id = app.operator(&f, "boss@acme.example.com", Role::Admin, &[]).await;
    let (admin, boss) = (app.login("admin@acme.example.com").await, app.login("boss@acme.example.com").await);
    let mut stream = operator_stream(&app, &boss, &[]).await;
    let (status, body) =
        app.authed(Method::PATCH, &format!("/api/admin/operators/{boss_id}"), &admin, Some(json!({"role": "agent"}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(stream.event().await, None, "a demoted admin's stream ends; it reconnects with its new scope");
    let mut again = operator_stream(&app, &boss, &[]).await;
    app.open_conversation("/api", &f.token, "v1", "an agent without the site sees nothing").await;
    let eu = app.site("acme-eu", f.scope.tenant, &[]).await;
    let (status, _) =
        app.authed(Method::PATCH, &format!("/api/admin/operators/{boss_id}"), &admin, Some(json!({"site_ids": [eu.scope.site.0]}))).await;
    assert_eq!(status, StatusCode::OK);
    app.open_conversation("/api", &eu.token, "v2", "its own site").await;
    assert_eq!(bodies(&again.events(2).await), ["its own site", "its own site"]);
}

#[tokio::test]
async fn the_operator_stream_refuses_bad_cursors_and_too_many_streams() {
    let app = TestApp::with().var("PARLEY_STREAMS_PER_ADDRESS", "1").start().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let auth = format!("Bearer {admin}");
    for bad in ["last_event_id=x-y", "after=1-2-3-4"] {
        let Err((status, body)) = sse::open(&app, &format!("/api/mobile/events?{bad}"), &[("authorization", &auth)]).await else {
            panic!("{bad} was accepted")
        };
        let field = bad.split('=').next().unwrap();
        assert_fields(status, &body, &[field]);
    }
    let _held = operator_stream(&app, &admin, &[]).await;
    let Err((status, body)) = sse::open(&app, "/api/mobile/events", &[("authorization", &auth)]).await else {
        panic!("a second stream was accepted")
    };
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    let (status, body) = app.authed(Method::GET, "/api/mobile/events", &admin, None).await;
    assert_eq!(status, StatusCode::OK, "the JSON catch-up is not a stream: {body}");
}

#[tokio::test]
async fn an_operator_stream_ends_when_its_token_is_revoked_or_expires() {
    let app = TestApp::with().var("PARLEY_STREAM_KEEPALIVE", "100ms").var("PARLEY_MOBILE_TOKEN_TTL", "1h").start().await;
    app.fixture("acme", &[]).await;
    let (first, second) = (app.login("admin@acme.example.com").await, app.login("admin@acme.example.com").await);
    let mut revoked = operator_stream(&app, &first, &[]).await;
    let mut expiring = operator_stream(&app, &second, &[]).await;

    let (status, _) = app.authed(Method::POST, "/api/mobile/logout", &first, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(revoked.event().await, None, "a revoked token's stream ends");

    app.clock.advance(Duration::from_secs(3_601));
    assert_eq!(expiring.event().await, None, "an expired token's stream ends");

    let (status, body) = app.send(Method::GET, "/api/mobile/events", None, &[("accept", "text/event-stream")]).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
}

#[tokio::test]
async fn operators_resume_with_last_event_id_and_get_a_reset_for_an_unknown_cursor() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let mut stream = operator_stream(&app, &admin, &[]).await;
    app.open_conversation("/api", &f.token, "v1", "hello").await;
    let first = stream.events(2).await;
    drop(stream);
    let id = conversation_id(&app, &admin).await;
    reply(&app, &admin, id, "while away").await;

    let created = first[0].0.clone().unwrap();
    let mut resumed = operator_stream(&app, &admin, &[("last-event-id", &created)]).await;
    assert_eq!(bodies(&resumed.events(2).await), ["hello", "while away"]);
    let mut by_query = {
        let auth = format!("Bearer {admin}");
        sse::open_ok(&app, &format!("/api/v1/mobile/events?last_event_id={created}"), &[("authorization", &auth)]).await
    };
    assert_eq!(bodies(&by_query.events(2).await), ["hello", "while away"]);

    let mut reset = operator_stream(&app, &admin, &[("last-event-id", "0-1-zz")]).await;
    assert_eq!(reset.event().await.map(|e| e.1), Some("reset".into()));
    assert_eq!(reset.frame().await, None);
}

#[tokio::test]
async fn streams_end_cleanly_at_shutdown() {
    let app = TestApp::with().var("PARLEY_SHUTDOWN_TIMEOUT", "60s").start().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    let mut widget = sse::open_ok(&app, &widget_stream_path("/api", &public_id, &f.token, None), &[]).await;
    let mut operator = operator_stream(&app, &admin, &[]).await;
    // The head once the opening is readable (on PostgreSQL a moment after
    // its commit), so that the long poll has nothing to answer at once.
    let head = eventually(|| async {
        let (status, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
        assert_eq!(status, StatusCode::OK, "{list}");
        let head = list["meta"]["cursor"].as_str().expect("meta.cursor").to_owned();
        let (_, page) = app.authed(Method::GET, &format!("/api/mobile/events?after={head}"), &admin, None).await;
        (page["events"] == json!([])).then_some(head)
    })
    .await;
    let request =
        app.client.get(app.url(&format!("/api/mobile/events?after={head}&wait=30"))).header("authorization", format!("Bearer {admin}"));
    let long_poll = tokio::spawn(request.send());
    // Answered at once when not held: held until it is.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!long_poll.is_finished(), "the long poll waits");

    // Far sooner than the drain time: neither the streams nor the long
    // poll hold it, and the long poll is answered, not cut.
    tokio::time::timeout(Duration::from_secs(20), app.stop()).await.expect("the server stops without waiting out its drain time");
    assert_eq!(widget.frame().await, None, "the widget's stream ended, not failed");
    assert_eq!(operator.frame().await, None);
    let answer = long_poll.await.expect("the long poll's task").expect("the long poll is answered");
    assert_eq!(answer.status(), StatusCode::OK);
    let body: Value = answer.json().await.expect("a JSON page");
    assert!(body["cursor"].is_string(), "{body}");
}

/// A stream dropped by a restart resumes on the new process from its last
/// event: what was written in between comes once, then live events.
#[tokio::test]
async fn a_stream_resumes_across_a_restart_without_losing_or_repeating() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _database) = fresh_database(dir.path(), "restart.sqlite3").await;
    let first = TestApp::with().var("PARLEY_DATABASE_URL", &url).start().await;
    let f = first.fixture("acme", &[]).await;
    let admin = first.login("admin@acme.example.com").await;
    let public_id = first.open_conversation("/api", &f.token, "v1", "hello").await;
    let cursor = messages_cursor(&first, "/api", &f.token, &public_id).await;
    let path = widget_stream_path("/api", &public_id, &f.token, Some(&cursor));
    let mut stream = sse::open_ok(&first, &path, &[]).await;
    let id = conversation_id(&first, &admin).await;
    reply(&first, &admin, id, "before").await;
    let before = until_message(&mut stream, "before").await.pop().expect("before");
    first.stop().await;
    while stream.frame().await.is_some() {}

    let second = TestApp::with().var("PARLEY_DATABASE_URL", &url).start().await;
    reply(&second, &admin, id, "after").await;
    let last = before.0.unwrap();
    let mut resumed = sse::open_ok(&second, &path, &[("last-event-id", &last)]).await;
    assert_eq!(bodies(&resumed.events(1).await), ["after"]);
    reply(&second, &admin, id, "live").await;
    assert_eq!(bodies(&resumed.events(1).await), ["live"]);
}

/// With two instances on one PostgreSQL database, a stream on one sees
/// what is written through the other (woken by its notification).
#[tokio::test]
async fn a_stream_on_one_instance_sees_writes_through_another() {
    if backend() != "postgres" {
        return;
    }
    let a = TestApp::spawn().await;
    let b = TestApp::with().var("PARLEY_DATABASE_URL", &a.database_url).start().await;
    let f = a.fixture("acme", &[]).await;
    let admin = a.login("admin@acme.example.com").await;
    let public_id = a.open_conversation("/api", &f.token, "v1", "hello").await;
    let cursor = messages_cursor(&b, "/api", &f.token, &public_id).await;
    let mut on_b = sse::open_ok(&b, &widget_stream_path("/api", &public_id, &f.token, Some(&cursor)), &[]).await;
    let mut operator_on_b = operator_stream(&b, &admin, &[]).await;
    let id = conversation_id(&a, &admin).await;
    reply(&a, &admin, id, "through a").await;
    a.post_message("/api", &f.token, &public_id, "visitor through a").await;
    let seen = until_message(&mut on_b, "visitor through a").await;
    assert_eq!(bodies(&seen).into_iter().filter(|b| b != "hello").collect::<Vec<_>>(), ["through a", "visitor through a"]);
    let seen = until_message(&mut operator_on_b, "visitor through a").await;
    assert_eq!(bodies(&seen).into_iter().filter(|b| b != "hello").collect::<Vec<_>>(), ["through a", "visitor through a"]);
}

/// A visitor's cursor is its own conversation's: the `cursor` of its
/// messages and the ids of its stream move only when something it sees
/// happens there, never for another conversation of the tenant or an
/// operator-only action in its own (a note, a hand-over), and they show
/// nothing of the tenant's feed.
#[tokio::test]
async fn a_visitors_cursor_moves_only_with_what_it_sees() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let bea = app.operator(&f, "bea@acme.example.com", Role::Admin, &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let from_the_start = list["meta"]["cursor"].as_str().unwrap().to_owned();
    let mine = app.open_conversation("/api", &f.token, "v1", "hello").await;
    let mine_id = conversation_id(&app, &admin).await;
    let other = app.open_conversation("/api", &f.token, "v2", "elsewhere").await;
    let other_id = conversation_id(&app, &admin).await;
    let (status, _) = app.authed(Method::POST, &format!("/api/mobile/conversations/{mine_id}/assign"), &admin, None).await;
    assert_eq!(status, StatusCode::OK);
    // The take's entry, as operators see it, once it is readable (on
    // PostgreSQL a moment after its commit): the visitor's cursor is that
    // very entry, the last change of its conversation it sees.
    let take = eventually(|| async {
        let (_, page) = app.authed(Method::GET, &format!("/api/mobile/events?after={from_the_start}"), &admin, None).await;
        page["events"].as_array().unwrap().iter().find_map(|e| {
            (e["event"] == "conversation.updated" && e["data"]["conversation"]["id"] == mine_id)
                .then(|| e["cursor"].as_str().unwrap().to_owned())
        })
    })
    .await;
    let take: Vec<i64> = take.split('-').map(|part| i64::from_str_radix(part, 36).unwrap()).collect();
    let taken = eventually(|| async {
        let text = messages_cursor(&app, "/api", &f.token, &mine).await;
        let opened = app.open_visitor_cursor(&f, &mine, &text).await.expect("the conversation's own cursor");
        (vec![opened.position.tx, opened.position.id, opened.at.as_millis()] == take).then_some(text)
    })
    .await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let operators_cursor = list["meta"]["cursor"].as_str().unwrap().to_owned();

    // What the visitor does not see: another conversation's life, a note
    // and a hand-over in its own.
    app.post_message("/api", &f.token, &other, "more elsewhere").await;
    reply(&app, &admin, other_id, "answered elsewhere").await;
    app.authed(Method::POST, &format!("/api/mobile/conversations/{other_id}/close"), &admin, None).await;
    app.transfer_with_note(&admin, mine_id, json!(bea), "an operator-only note").await;
    // Once all of it is readable for operators, it is for the visitor too.
    let (_, after) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    eventually(|| async {
        let (_, page) = app.authed(Method::GET, &format!("/api/mobile/events?after={operators_cursor}"), &admin, None).await;
        (page["events"].as_array().unwrap().len() >= 7).then_some(())
    })
    .await;
    assert_ne!(after["meta"]["cursor"].as_str(), Some(operators_cursor.as_str()), "the tenant's feed moved");
    assert_eq!(messages_cursor(&app, "/api", &f.token, &mine).await, taken, "the visitor's did not");
    let (_, page) = app.get(&format!("/api/widget/conversations/{mine}/messages?token={}", f.token)).await;
    let seen: Vec<&str> = page["messages"].as_array().unwrap().iter().map(|m| m["body"].as_str().unwrap()).collect();
    assert_eq!(seen, ["hello"], "no line tells the visitor who routed it to whom");

    let mut stream = sse::open_ok(&app, &widget_stream_path("/api", &mine, &f.token, Some(&taken)), &[]).await;
    match stream.frame_within(Duration::from_millis(300)).await {
        Err(()) => {}
        other => panic!("nothing the visitor sees happened since its cursor: {other:?}"),
    }
    reply(&app, &admin, mine_id, "here to help").await;
    let (id, kind, data) = stream.event().await.expect("the reply");
    assert_eq!((kind.as_str(), data["message"]["body"].as_str()), ("message.created", Some("here to help")));
    let id = id.expect("an id to resume from");
    assert_ne!(id, taken);
    assert_eq!(eventually(|| async { Some(messages_cursor(&app, "/api", &f.token, &mine).await).filter(|c| *c != taken) }).await, id);
}

/// Asserts that `stream` ends within 3 s (before the 5 s recheck could end
/// it) and sends no event before it does.
async fn ends_without_an_event(stream: &mut EventStream) {
    let ended = tokio::time::timeout(Duration::from_secs(3), async {
        loop {
            match stream.frame().await {
                None => return,
                Some(Frame::Comment(_)) => {}
                Some(other) => panic!("an event after the token ended: {other:?}"),
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream ends at its next read, before the recheck");
}

/// An operator's stream reads only while its token holds, checked in the
/// snapshot of the entries it reads: an entry committed after a logout, a
/// new password, disabling or a revocation never reaches the stream, even
/// when that entry is what wakes it; the stream ends instead, long before
/// its idle recheck (5 s here).
#[tokio::test]
async fn an_operator_stream_never_sends_an_entry_committed_after_its_token_ended() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let (admin, ways) = ending_tokens(&app, &f).await;
    for (n, (token, ending)) in ways.into_iter().enumerate() {
        let mut stream = operator_stream(&app, &token, &[]).await;
        end_token(&app, &admin, &token, &ending).await;
        app.open_conversation("/api", &f.token, &format!("after-{n}"), "after the revocation").await;
        ends_without_an_event(&mut stream).await;
    }
}

/// The web app's stream is held by its session the same way.
#[tokio::test]
async fn the_web_apps_stream_ends_with_its_session_and_sends_nothing_after() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let mut browser = crate::web_browser::Browser::signed_in(&app, "admin@acme.example.com").await;
    let session = browser.cookies["parley_session"].clone();
    let mut stream = sse::open_ok(&app, "/app/events", &[("cookie", &format!("parley_session={session}"))]).await;
    let page = browser.get("/app").await;
    let out = browser.post("/app/logout", &[("csrf", &page.field("csrf"))]).await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    app.open_conversation("/api", &f.token, "v1", "after the sign-out").await;
    ends_without_an_event(&mut stream).await;
}
