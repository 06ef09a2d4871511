//! The web app's conversation page and its live stream, driven as a
//! browser without JavaScript drives them: the page, its forms and the
//! redirects back; what reaches the visitor and what stays with the
//! operators; the forms refused; who may see which conversation.

use parley_domain::model::Role;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::sse::{self, Frame};
use crate::web_browser::{Browser, Page};

/// A conversation with one visitor message, and its admin signed in on
/// its page.
async fn opened(app: &TestApp, f: &Fixture) -> (String, i64, Browser) {
    let public_id = app.open_conversation("/api", &f.token, "ann", "Where is my parcel?").await;
    let mut admin = Browser::signed_in(app, &format!("admin@{}.example.com", f.slug)).await;
    let id = admin.inbox("").await.first_conversation();
    (public_id, id, admin)
}

/// What the visitor's widget shows of the conversation.
async fn widget_bodies(app: &TestApp, f: &Fixture, public_id: &str) -> Vec<String> {
    let (status, body) = app.get(&format!("/api/widget/conversations/{public_id}/messages?token={}", f.token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["messages"].as_array().unwrap().iter().map(|m| m["body"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn a_reply_reaches_the_visitor_and_a_note_never_does() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let (public_id, id, mut admin) = opened(&app, &f).await;

    let page = admin.conversation(id).await;
    assert!(page.html.contains("Where is my parcel?"));
    assert!(page.html.contains("aria-live=\"polite\""), "new messages are announced");
    assert!(page.html.contains("<script type=\"module\" src=\"/app/assets/live.js?v="), "the live script is a file of this release");
    assert_eq!(
        page.html.matches("<script").count(),
        page.html.matches("<script type=\"module\" src=").count(),
        "no inline script, only module files"
    );

    admin.acted(id, "reply", &[("body", "It left the warehouse today.")]).await;
    admin.acted(id, "note", &[("body", "Carrier is slow this week")]).await;
    let page = admin.conversation(id).await;
    assert!(page.html.contains("It left the warehouse today."));
    assert!(page.html.contains("Carrier is slow this week") && page.html.contains("Note · operators only"), "the note is marked");

    let widget = widget_bodies(&app, &f, &public_id).await;
    assert!(widget.contains(&"It left the warehouse today.".to_owned()), "{widget:?}");
    assert!(!widget.iter().any(|b| b.contains("Carrier")), "a note never reaches the visitor: {widget:?}");

    // The form sent again (a double click, a resubmitted POST) adds nothing.
    let page = admin.conversation(id).await;
    let (csrf, client_id) = (page.field("csrf"), page.field("client_message_id"));
    for _ in 0..2 {
        let form = [("csrf", csrf.as_str()), ("client_message_id", client_id.as_str()), ("body", "Sent once")];
        assert_eq!(admin.post(&format!("/app/conversations/{id}/reply"), &form).await.status, StatusCode::SEE_OTHER);
    }
    let widget = widget_bodies(&app, &f, &public_id).await;
    assert_eq!(widget.iter().filter(|b| *b == "Sent once").count(), 1, "{widget:?}");
}

#[tokio::test]
async fn the_page_shows_what_the_visitor_has_seen() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let (public_id, id, mut admin) = opened(&app, &f).await;
    admin.acted(id, "reply", &[("body", "It left the warehouse today.")]).await;
    assert!(!admin.conversation(id).await.html.contains("class=\"seen\""), "not seen yet");
    let (_, body) = app.get(&format!("/api/widget/conversations/{public_id}/messages?token={}", f.token)).await;
    let answer = body["messages"].as_array().unwrap().last().unwrap()["id"].clone();
    let (status, _) =
        app.post(&format!("/api/widget/conversations/{public_id}/read"), json!({"token": f.token, "message_id": answer})).await;
    assert_eq!(status, StatusCode::OK);
    let page = admin.conversation(id).await;
    assert_eq!(page.html.matches("class=\"seen\"").count(), 1, "the answer's receipt, and nothing for the visitor's own message");
}

#[tokio::test]
async fn the_page_shows_who_the_site_says_the_visitor_is_and_sends_typing() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let token = app.login("admin@acme.example.com").await;
    let (_, list) = app.authed(reqwest::Method::GET, &format!("/api/admin/sites/{}/installations", f.scope.site.0), &token, None).await;
    let installation = list["installations"][0]["id"].as_i64().unwrap();
    let (_, made) =
        app.authed(reqwest::Method::POST, &format!("/api/admin/installations/{installation}/identity-secret"), &token, None).await;
    let secret = made["identity_secret"].as_str().unwrap();
    let jwt = {
        use base64::Engine;
        use hmac::{KeyInit, Mac};
        let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let exp = parley_domain::Clock::now(&*app.clock).unix_seconds() + 600;
        let signing = format!("{}.{}", b64(&json!({"alg": "HS256"})), b64(&json!({"sub": "u-9", "exp": exp, "email": "ann@example.com"})));
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(signing.as_bytes());
        format!("{signing}.{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes()))
    };
    // An anonymous visitor's conversation, then the page identifies it.
    let (_, id, mut admin) = opened(&app, &f).await;
    let (status, body) = app
        .post(
            "/api/widget/visitors",
            json!({"token": f.token, "uuid": "ann", "jwt": jwt, "attributes": {"plan": "<b>pro</b>", "seats": 3}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let page = admin.conversation(id).await;
    assert!(page.html.contains("Yes, by the site: user <strong>u-9</strong>"), "{}", page.html);
    assert!(page.html.contains("ann@example.com <span class=\"proven\">(proven by the site)</span>"));
    assert!(page.html.contains("plan: &lt;b&gt;pro&lt;/b&gt;") && page.html.contains("seats: 3"), "attributes, as text");

    let csrf = page.field("csrf");
    let answer = admin.post(&format!("/app/conversations/{id}/typing"), &[("csrf", &csrf)]).await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn take_hand_over_with_a_note_close_and_reopen() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let bea = app.operator(&f, "bea@acme.example.com", Role::Agent, &[f.scope.site]).await;
    app.operator(&f, "elsewhere@acme.example.com", Role::Agent, &[]).await;
    let (public_id, id, mut admin) = opened(&app, &f).await;

    let page = admin.conversation(id).await;
    assert!(page.html.contains("Waiting for an operator"));
    assert!(page.html.contains("bea (bea@acme.example.com)"), "an agent of the site can be chosen");
    assert!(!page.html.contains("elsewhere@"), "an agent without the site cannot");

    admin.acted(id, "take", &[]).await;
    let page = admin.conversation(id).await;
    assert!(page.html.contains("Assigned") && page.html.contains("joined the conversation"), "{}", page.html);
    assert!(!page.html.contains("/take\""), "no take for the assignee");

    let bea_id = bea.to_string();
    admin.acted(id, "hand-over", &[("operator_id", &bea_id), ("note", "VIP customer, be quick")]).await;
    let page = admin.conversation(id).await;
    assert!(page.html.contains("transferred the conversation to bea"));
    assert!(page.html.contains("VIP customer, be quick"), "the transfer note is on the page");
    assert!(!widget_bodies(&app, &f, &public_id).await.iter().any(|b| b.contains("VIP")), "and not in the widget");

    admin.acted(id, "close", &[]).await;
    let page = admin.conversation(id).await;
    assert!(page.html.contains("Closed") && page.html.contains("/reopen\""), "a closed conversation offers reopen only");
    assert!(!page.html.contains("Closed</span> to"), "a closed conversation is with nobody: {}", page.html);
    assert!(page.html.contains("Conversation closed by admin"), "operators see who closed it");
    assert!(!page.html.contains("/hand-over\""));
    app.clock.advance(std::time::Duration::from_secs(3_600));
    admin.acted(id, "reopen", &[]).await;
    let page = admin.conversation(id).await;
    assert!(page.html.contains("Conversation reopened"));
    let (_, list) = app.authed(reqwest::Method::GET, "/api/mobile/conversations", &app.login("admin@acme.example.com").await, None).await;
    let at = |key: &str| list["conversations"][0][key].as_str().unwrap().to_owned();
    assert!(at("last_message_at") > at("created_at"), "a reopening counts as activity: {list}");
    assert!(page.html.contains("to <strong>bea</strong>"), "back to its assignee, who can still answer: {}", page.html);
    admin.acted(id, "reopen", &[]).await;
    let again = admin.conversation(id).await;
    assert_eq!(again.html.matches("Conversation reopened").count(), 1, "reopening an open conversation changes nothing");

    let (_, list) = app.authed(reqwest::Method::GET, "/api/mobile/conversations", &app.login("bea@acme.example.com").await, None).await;
    assert_eq!(list["conversations"][0]["assignee"]["id"], json!(bea), "the mobile API sees the same state");
}

#[tokio::test]
async fn bad_input_is_shown_beside_its_form_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "bea@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let (public_id, id, mut admin) = opened(&app, &f).await;
    let before = widget_bodies(&app, &f, &public_id).await;

    for (action, fields, problem) in [
        ("reply", vec![("body", "   ")], "The reply"),
        ("reply", vec![("body", "bell \u{7}")], "The reply"),
        ("note", vec![("body", "")], "The note is required"),
        ("hand-over", vec![("operator_id", "abc")], "Choose an operator"),
        ("hand-over", vec![("operator_id", "")], "Choose an operator"),
        ("hand-over", vec![("operator_id", "999999")], "No such operator."),
    ] {
        let answer = admin.act(id, action, &fields).await;
        assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{action} {fields:?}: {}", answer.html);
        assert!(answer.html.contains("role=\"alert\"") && answer.html.contains(problem), "{action}: {}", answer.html);
    }
    let long = "x".repeat(5_001);
    let answer = admin.act(id, "reply", &[("body", &long)]).await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(answer.html.contains(&long), "what was typed is kept");

    assert_eq!(widget_bodies(&app, &f, &public_id).await, before, "nothing was added");
    let page = admin.conversation(id).await;
    assert!(page.html.contains("Waiting for an operator"), "nor changed");

    let missing = admin.get("/app/conversations/nope").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert!(missing.headers["content-type"].to_str().unwrap().starts_with("text/html"), "a page, not JSON");
    assert_eq!(admin.get("/app/conversations/999999").await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn every_form_of_the_page_needs_its_token_and_this_origin() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let (public_id, id, mut admin) = opened(&app, &f).await;
    let csrf = admin.conversation(id).await.field("csrf");
    for action in ["reply", "note", "take", "hand-over", "close", "reopen", "typing"] {
        let path = format!("/app/conversations/{id}/{action}");
        let fields = [("body", "forged"), ("operator_id", "1")];
        let without = admin.post(&path, &fields).await;
        assert_eq!(without.status, StatusCode::FORBIDDEN, "{action} without a token");
        let with_token = [("csrf", csrf.as_str()), ("body", "forged"), ("operator_id", "1")];
        let cross = admin.send(reqwest::Method::POST, &path, Some(&with_token), &[("sec-fetch-site", "cross-site")]).await;
        assert_eq!(cross.status, StatusCode::FORBIDDEN, "{action} from another site");
    }
    assert_eq!(widget_bodies(&app, &f, &public_id).await, ["Where is my parcel?"]);
    assert!(admin.conversation(id).await.html.contains("Waiting for an operator"));

    let mut stranger = Browser::new(&app);
    let answer = stranger.post(&format!("/app/conversations/{id}/reply"), &[("csrf", &csrf), ("body", "hi")]).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "no session");
    assert_eq!(
        answer.location.as_deref(),
        Some(format!("/app/login?next=%2Fapp%2Fconversations%2F{id}%2Freply").as_str()),
        "and back after"
    );
}

/// A conversation out of an operator's sight is "not found" on its page
/// and on every form, as in the API.
#[tokio::test]
async fn a_page_shows_only_what_its_operator_may_see() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let eu = app.site("acme-eu", f.scope.tenant, &[]).await;
    app.fixture("globex", &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[eu.scope.site]).await;
    app.operator(&f, "nosite@acme.example.com", Role::Agent, &[]).await;
    let (public_id, id, mut admin) = opened(&app, &f).await;
    let csrf_of = |page: &Page| page.field("csrf");

    for email in ["agent@acme.example.com", "nosite@acme.example.com", "admin@globex.example.com"] {
        let mut other = Browser::signed_in(&app, email).await;
        let csrf = csrf_of(&other.inbox("").await);
        assert_eq!(other.get(&format!("/app/conversations/{id}")).await.status, StatusCode::NOT_FOUND, "{email}");
        for action in ["reply", "note", "take", "hand-over", "close", "reopen", "typing"] {
            let fields = [("csrf", csrf.as_str()), ("body", "intruder"), ("operator_id", "1")];
            let answer = other.post(&format!("/app/conversations/{id}/{action}"), &fields).await;
            assert_eq!(answer.status, StatusCode::NOT_FOUND, "{email} {action}");
        }
    }
    assert_eq!(widget_bodies(&app, &f, &public_id).await, ["Where is my parcel?"]);
    assert!(admin.conversation(id).await.html.contains("Waiting for an operator"));
}

/// The page's stream: the operator stream of the mobile API, opened with
/// the session cookie, from the cursor the page was rendered at.
#[tokio::test]
async fn the_live_stream_follows_the_session() {
    let app = TestApp::with().var("PARLEY_STREAM_KEEPALIVE", "100ms").start().await;
    let f = app.fixture("acme", &[]).await;
    let (public_id, id, mut admin) = opened(&app, &f).await;
    let page = admin.conversation(id).await;
    let cursor = page.attr("data-cursor");
    let session = admin.cookies["parley_session"].clone();
    let cookie = format!("parley_session={session}");

    let refused = sse::open(&app, "/app/events", &[]).await.err().expect("refused without a session");
    assert_eq!(refused.0, StatusCode::UNAUTHORIZED);
    let bearer = app.login("admin@acme.example.com").await;
    let refused = sse::open(&app, "/app/events", &[("cookie", &format!("parley_session={bearer}"))]).await.err().expect("a bearer token");
    assert_eq!(refused.0, StatusCode::UNAUTHORIZED, "a bearer token is not a session");

    let cross = sse::open(&app, "/app/events", &[("cookie", &cookie), ("sec-fetch-site", "cross-site")]).await;
    assert_eq!(cross.err().expect("refused from another site").0, StatusCode::FORBIDDEN);

    // Sent after the page was rendered and before the stream opened: the
    // cursor still brings it.
    let (status, body) = app.post_message("/api", &f.token, &public_id, "Any news?").await;
    assert!(status.is_success(), "{body}");
    let mut stream = sse::open_ok(&app, &format!("/app/events?after={cursor}"), &[("cookie", &cookie)]).await;
    assert!(stream.content_type.starts_with("text/event-stream"));
    let data: Value = loop {
        match stream.frame().await.expect("an event") {
            Frame::Event { event, data, .. } if event == "message.created" => break data,
            _ => {}
        }
    };
    assert_eq!(data["message"]["body"], "Any news?");
    assert_eq!(data["conversation"]["id"], id);

    // Signing out ends the stream.
    let csrf = page.field("csrf");
    assert_eq!(admin.post("/app/logout", &[("csrf", &csrf)]).await.status, StatusCode::SEE_OTHER);
    assert_eq!(stream.event().await, None, "a signed-out session's stream ends");
}

/// A long conversation shows its latest messages, and says that earlier
/// ones are left out; a shorter one shows every message.
#[tokio::test]
async fn a_long_conversation_shows_its_latest_messages() {
    let app = TestApp::with().var("PARLEY_RATE_LIMITS", "off").start().await;
    let f = app.fixture("acme", &[]).await;
    let (public_id, id, mut admin) = opened(&app, &f).await;
    for n in 1..=149 {
        let (status, body) = app.post_message("/api", &f.token, &public_id, &format!("message {n}")).await;
        assert!(status.is_success(), "{body}");
    }
    let page = admin.conversation(id).await;
    assert!(page.html.contains("Where is my parcel?") && page.html.contains(">message 149<"), "all 150 shown");
    assert!(!page.html.contains("Earlier messages are not shown"));

    for n in 150..=210 {
        let (status, body) = app.post_message("/api", &f.token, &public_id, &format!("message {n}")).await;
        assert!(status.is_success(), "{body}");
    }
    let page = admin.conversation(id).await;
    assert_eq!(page.html.matches("<li class=\"message").count(), 200, "the latest 200");
    assert!(page.html.contains(">message 210<") && page.html.contains(">message 11<"));
    assert!(!page.html.contains(">message 10<") && !page.html.contains("Where is my parcel?"));
    assert!(page.html.contains("Earlier messages are not shown"));
}

/// An explicit reopen is activity: the idle sweep, which closes what has
/// been quiet past `PARLEY_AUTO_CLOSE_AFTER`, leaves it open.
#[tokio::test]
async fn a_reopened_conversation_outlives_the_idle_sweep() {
    let app = TestApp::with()
        .var("PARLEY_SWEEP_INTERVAL", "20ms")
        .var("PARLEY_AUTO_CLOSE_AFTER", "1h")
        .var("PARLEY_METRICS_TOKEN", METRICS_TOKEN)
        .start()
        .await;
    let f = app.fixture("acme", &[]).await;
    let (_, id, mut admin) = opened(&app, &f).await;
    admin.acted(id, "close", &[]).await;
    app.clock.advance(std::time::Duration::from_secs(2 * 3_600));
    admin.acted(id, "reopen", &[]).await;
    app.clock.advance(std::time::Duration::from_secs(1_800));
    // Two passes after the clock moved: one has run wholly after it.
    let sweeps = |text: String| gauge(&text, "parley_sweeps_total");
    let before = sweeps(scrape_metrics(&app).await);
    eventually(|| async { (sweeps(scrape_metrics(&app).await) >= before + 2.0).then_some(()) }).await;
    let page = admin.conversation(id).await;
    assert!(page.html.contains("Waiting for an operator"), "still open half an hour after the reopen: {}", page.html);
}

/// Two operators on the same new conversation: the one whose page is
/// out of date is told rather than silently taking it over.
#[tokio::test]
async fn taking_what_another_operator_took_meanwhile_is_refused() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "bea@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let (_, id, mut admin) = opened(&app, &f).await;
    let stale = admin.conversation(id).await;
    assert!(stale.html.contains("<input type=\"hidden\" name=\"seen\" value=\"\">") && stale.html.contains(">Take it<"));

    let mut bea = Browser::signed_in(&app, "bea@acme.example.com").await;
    bea.acted(id, "take", &[]).await;

    let csrf = stale.field("csrf");
    let late = admin.post(&format!("/app/conversations/{id}/take"), &[("csrf", &csrf), ("seen", "")]).await;
    assert_eq!(late.status, StatusCode::CONFLICT, "{}", late.html);
    assert!(late.html.contains("id=\"actions-problem\"") && late.html.contains("another operator took the conversation"), "{}", late.html);
    assert!(late.html.contains("to <strong>bea</strong>"), "the page now shows who has it");
    assert!(late.html.contains(">Take over from bea<"), "and offers to take over knowingly");

    admin.acted(id, "take", &[]).await;
    assert!(admin.conversation(id).await.html.contains("to <strong>admin</strong>"), "taking over from the one shown works");
}

/// A hand-over of a waiting conversation without a note is an
/// assignment; refused actions show beside the actions, not as an error page.
#[tokio::test]
async fn a_hand_over_without_a_note_assigns_and_a_refused_action_stays_on_the_page() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let bea = app.operator(&f, "bea@acme.example.com", Role::Agent, &[f.scope.site]).await.to_string();
    let (_, id, mut admin) = opened(&app, &f).await;
    let page = admin.conversation(id).await;
    assert!(page.html.contains("<option value=\"\" selected disabled>Choose an operator</option>"), "nobody is chosen for the operator");

    let answer = admin.act(id, "hand-over", &[("operator_id", &bea)]).await;
    assert_eq!(answer.location.as_deref(), Some(format!("/app/conversations/{id}#actions").as_str()));
    let page = admin.conversation(id).await;
    assert!(page.html.contains("admin assigned the conversation to bea"), "{}", page.html);

    let stale = admin.conversation(id).await;
    admin.acted(id, "close", &[]).await;
    let csrf = stale.field("csrf");
    let late = admin.post(&format!("/app/conversations/{id}/take"), &[("csrf", &csrf), ("seen", &bea)]).await;
    assert_eq!(late.status, StatusCode::CONFLICT);
    assert!(late.html.contains("This cannot be done now: the conversation is closed."), "{}", late.html);
    assert!(late.html.contains("/reopen\""), "the page as it is now");

    // A form's address opened as a page (a reload after a refusal) is the page.
    let reload = admin.get(&format!("/app/conversations/{id}/reply")).await;
    assert_eq!((reload.status, reload.location.as_deref()), (StatusCode::SEE_OTHER, Some(format!("/app/conversations/{id}").as_str())));
    let unknown = admin.get("/app/nothing/here").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(unknown.headers["content-type"].to_str().unwrap().starts_with("text/html"), "a page, not JSON");
}

/// After a reply the page opens at the latest message, where the reply
/// form follows: a long thread is not scrolled through again.
#[tokio::test]
async fn after_a_form_the_page_opens_at_the_latest_message() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let (_, id, mut admin) = opened(&app, &f).await;
    let answer = admin.act(id, "reply", &[("body", "On it")]).await;
    assert_eq!(answer.location.as_deref(), Some(format!("/app/conversations/{id}#latest").as_str()));
    let page = admin.conversation(id).await;
    assert_eq!(page.html.matches("id=\"latest\"").count(), 1);
    let latest = page.html.split("id=\"latest\"").nth(1).unwrap_or_default();
    assert!(latest.contains("On it") && !latest.contains("Where is my parcel?"), "the anchor is the latest message");
    assert!(admin.inbox("").await.html.contains(&format!("/app/conversations/{id}#latest")), "the inbox opens it there too");
}

/// Beside the conversation, the open conversations the operator may see,
/// this one marked; an agent's list holds only its sites'.
#[tokio::test]
async fn the_page_lists_the_open_conversations_beside_it() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let eu = app.site("acme-eu", f.scope.tenant, &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[eu.scope.site]).await;
    let (_, id, mut admin) = opened(&app, &f).await;
    app.open_conversation("/api", &eu.token, "eu-visitor", "Bonjour").await;
    let page = admin.conversation(id).await;
    assert!(page.html.contains("aria-label=\"Open conversations\""));
    assert!(page.html.contains("<li aria-current=\"page\"><a class=\"conversation"), "{}", page.html);
    assert_eq!(page.html.matches("<a class=\"conversation").count(), 2, "both open conversations");
    let mut agent = Browser::signed_in(&app, "agent@acme.example.com").await;
    let inbox = agent.inbox("").await;
    let eu_id = inbox.first_conversation();
    let page = agent.conversation(eu_id).await;
    assert_eq!(page.html.matches("<a class=\"conversation").count(), 1, "only its site's");
}
