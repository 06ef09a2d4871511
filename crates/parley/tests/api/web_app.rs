//! The web app's sign-in, session and inbox (`/app`) through the real
//! HTTP stack, as a browser without JavaScript uses them: forms, cookies,
//! redirects. What a session may see, how it ends, and the forms refused
//! without their anti-forgery token.

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;
use crate::web_browser::{Browser, Page};

#[tokio::test]
async fn signing_in_sets_a_session_cookie_and_opens_the_inbox() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.open_conversation("/api", &f.token, "v1", "hello").await;
    let mut browser = Browser::new(&app);

    let before = browser.get("/app").await;
    assert_eq!((before.status, before.location.as_deref()), (StatusCode::SEE_OTHER, Some("/app/login")), "not signed in yet");

    let form = browser.get("/app/login").await;
    assert_eq!(form.status, StatusCode::OK);
    assert!(form.headers["content-type"].to_str().unwrap().starts_with("text/html"));
    assert!(form.headers["content-security-policy"].to_str().unwrap().contains("script-src 'self'"), "the strict page policy");
    assert!(form.html.contains("<label for=\"email\">") && form.html.contains("<main"), "labelled fields in a main landmark");

    let answer = browser.sign_in("admin@acme.example.com", PASSWORD).await;
    assert_eq!((answer.status, answer.location.as_deref()), (StatusCode::SEE_OTHER, Some("/app")));
    let cookie = answer.cookie("parley_session").expect("the session cookie");
    assert!(cookie.starts_with("parley_session=ses_"), "{cookie}");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/app", "Max-Age=604800"] {
        assert!(cookie.contains(attribute), "{attribute} in {cookie}");
    }
    assert!(!cookie.contains("Secure"), "not over plain http");

    let inbox = browser.inbox("").await;
    assert!(inbox.html.contains("Visitor "), "the conversation is listed: {}", inbox.html);
    assert!(inbox.html.contains("aria-current=\"page\">Open<"), "the open filter is the default");
    assert_eq!(inbox.headers["cache-control"], "no-store");
    let again = browser.get("/app/login").await;
    assert_eq!(again.location.as_deref(), Some("/app"), "signed in already");
}

#[tokio::test]
async fn the_status_filter_lists_only_its_conversations() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    app.open_conversation("/api", &f.token, "v1", "first").await;
    let (status, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    assert_eq!(status, StatusCode::OK);
    let id = list["conversations"][0]["id"].as_i64().unwrap();
    let (status, _) = app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/close"), &admin, None).await;
    assert_eq!(status, StatusCode::OK);
    app.open_conversation("/api", &f.token, "v2", "second").await;

    let mut browser = Browser::signed_in(&app, "admin@acme.example.com").await;
    let count = |page: &Page| page.html.matches("<a class=\"conversation").count();
    assert_eq!(count(&browser.inbox("").await), 1, "open only");
    assert_eq!(count(&browser.inbox("?status=closed").await), 1);
    assert_eq!(count(&browser.inbox("?status=all").await), 2);
    let odd = browser.inbox("?status=<script>&page=-1").await;
    assert_eq!(count(&odd), 1, "an unknown filter is the default one");
    assert!(!odd.html.contains("<script>"), "nothing from the address is echoed raw");
}

#[tokio::test]
async fn a_wrong_password_is_refused_and_repeated_failures_are_throttled() {
    let app = TestApp::with().var("PARLEY_RATE_LIMITS", "on").start().await;
    app.fixture("acme", &[]).await;
    let mut browser = Browser::new(&app);
    for _ in 0..5 {
        let page = browser.sign_in("admin@acme.example.com", "wrong password").await;
        assert_eq!(page.status, StatusCode::UNAUTHORIZED);
        assert!(page.html.contains("The email or password is wrong."), "{}", page.html);
        assert!(page.html.contains("value=\"admin@acme.example.com\""), "the email is kept");
        assert!(page.cookie("parley_session").is_none());
    }
    let page = browser.sign_in("admin@acme.example.com", PASSWORD).await;
    assert_eq!(page.status, StatusCode::TOO_MANY_REQUESTS, "even the right password waits, as on the mobile API");
    assert!(page.headers.contains_key("retry-after"));
    assert!(page.html.contains("Too many attempts"), "{}", page.html);
    let (status, _) = app.post("/api/mobile/login", json!({"email": "admin@acme.example.com", "password": PASSWORD})).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "the failures count for the mobile API too");
}

#[tokio::test]
async fn forms_without_their_token_or_from_another_site_are_refused() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;

    // Sign-in: no token, a token without its cookie, another site.
    let mut browser = Browser::new(&app);
    let refused = browser.post("/app/login", &[("email", "admin@acme.example.com"), ("password", PASSWORD)]).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let form = browser.get("/app/login").await;
    let token = form.field("csrf");
    let mut stranger = Browser::new(&app);
    let replayed = stranger.post("/app/login", &[("csrf", &token), ("email", "admin@acme.example.com"), ("password", PASSWORD)]).await;
    assert_eq!(replayed.status, StatusCode::FORBIDDEN, "a token without its cookie");
    let fields = [("csrf", token.as_str()), ("email", "admin@acme.example.com"), ("password", PASSWORD)];
    let cross = browser.send(Method::POST, "/app/login", Some(&fields), &[("sec-fetch-site", "cross-site")]).await;
    assert_eq!(cross.status, StatusCode::FORBIDDEN);
    assert!(cross.cookie("parley_session").is_none());

    // Sign-out: without the session's token nothing happens.
    let mut browser = Browser::signed_in(&app, "admin@acme.example.com").await;
    let inbox = browser.inbox("").await;
    let forged = browser.post("/app/logout", &[("csrf", "forged")]).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    assert!(forged.html.contains("This form cannot be accepted"));
    let token = inbox.field("csrf");
    let cross = browser.send(Method::POST, "/app/logout", Some(&[("csrf", &token)]), &[("sec-fetch-site", "same-site")]).await;
    assert_eq!(cross.status, StatusCode::FORBIDDEN, "a sibling subdomain is another site");
    browser.inbox("").await;
    let mut other = Browser::signed_in(&app, "admin@acme.example.com").await;
    let other_token = other.inbox("").await.field("csrf");
    assert_ne!(other_token, token, "each session has its own token");
    let crossed = browser.post("/app/logout", &[("csrf", &other_token)]).await;
    assert_eq!(crossed.status, StatusCode::FORBIDDEN, "another session's token");

    // A browser that sends no Sec-Fetch-Site but an Origin: only this
    // address's own passes.
    let own = app.url("");
    for origin in ["https://evil.example", "null", own.replace("127.0.0.1", "localhost").as_str()] {
        let foreign = browser.send(Method::POST, "/app/logout", Some(&[("csrf", &token)]), &[("origin", origin)]).await;
        assert_eq!(foreign.status, StatusCode::FORBIDDEN, "{origin}");
    }
    assert_eq!(browser.inbox("").await.status, StatusCode::OK, "still signed in");
    // Behind a proxy that passes another address on, a current browser's
    // Sec-Fetch-Site decides: its own site's form is accepted.
    let proxied = [("host", "10.0.0.5:8080"), ("origin", "https://chat.example.com"), ("sec-fetch-site", "same-origin")];
    let inbox = browser.inbox("").await;
    assert_eq!(inbox.status, StatusCode::OK);
    let form = [("csrf", token.as_str()), ("name", "Admin")];
    let saved = browser.send(Method::POST, "/app/account", Some(&form), &proxied).await;
    assert_eq!(saved.location.as_deref(), Some("/app/account?done=saved"), "{}", saved.html);
    let same = browser.send(Method::POST, "/app/logout", Some(&[("csrf", &token)]), &[("origin", &own)]).await;
    assert_eq!(same.location.as_deref(), Some("/app/login"), "{}", same.html);
}

#[tokio::test]
async fn the_app_answers_pages_never_cors_nor_json() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let mut browser = Browser::signed_in(&app, "admin@acme.example.com").await;

    for path in ["/app", "/app/login", "/app/settings/canned"] {
        let wrong = browser.send(Method::PUT, path, None, &[]).await;
        assert_eq!(wrong.status, StatusCode::METHOD_NOT_ALLOWED, "{path}");
        let kind = wrong.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        assert!(kind.starts_with("text/html"), "{path}: {kind}");
        assert!(wrong.html.contains("This page does not take that kind of request."), "{}", wrong.html);
    }
    let slash = browser.get("/app/").await;
    assert_eq!(slash.status, StatusCode::NOT_FOUND);
    assert!(slash.html.contains("There is no such page."), "a page, not JSON: {}", slash.html);
    let api = browser.send(Method::PUT, "/api/v1/health", None, &[]).await;
    assert_eq!(api.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(api.html.contains("method_not_allowed"), "the API still answers JSON: {}", api.html);

    let preflight = [("origin", "https://evil.example"), ("access-control-request-method", "POST")];
    for path in ["/app", "/app/logout", "/app/settings/canned"] {
        let answer = browser.send(Method::OPTIONS, path, None, &preflight).await;
        assert!(answer.headers.get("access-control-allow-origin").is_none(), "{path} allows another origin");
        let page = browser.send(Method::GET, path, None, &[("origin", "https://evil.example")]).await;
        assert!(page.headers.get("access-control-allow-origin").is_none(), "{path} is readable from another origin");
    }
    let widget = browser.send(Method::OPTIONS, "/api/v1/widget/config", None, &preflight).await;
    assert!(widget.headers.get("access-control-allow-origin").is_some(), "the API still answers preflights");
}

#[tokio::test]
async fn logout_revokes_the_session_and_so_do_disabling_and_a_new_password() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let agent_id = app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;

    let mut browser = Browser::signed_in(&app, "admin@acme.example.com").await;
    let stolen = browser.cookies["parley_session"].clone();
    let token = browser.inbox("").await.field("csrf");
    let out = browser.post("/app/logout", &[("csrf", &token)]).await;
    assert_eq!((out.status, out.location.as_deref()), (StatusCode::SEE_OTHER, Some("/app/login")));
    assert!(out.cookie("parley_session").is_some_and(|c| c.contains("Max-Age=0")), "the browser forgets it");
    let mut thief = Browser::new(&app);
    thief.cookies.insert("parley_session".into(), stolen);
    assert_eq!(thief.get("/app").await.location.as_deref(), Some("/app/login"), "and the server no longer knows it");

    let mut agent = Browser::signed_in(&app, "agent@acme.example.com").await;
    agent.inbox("").await;
    let (status, _) = app.authed(Method::PATCH, &format!("/api/admin/operators/{agent_id}"), &admin, Some(json!({"active": false}))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(agent.get("/app").await.location.as_deref(), Some("/app/login"), "a disabled operator is signed out");
    let (status, _) = app.authed(Method::PATCH, &format!("/api/admin/operators/{agent_id}"), &admin, Some(json!({"active": true}))).await;
    assert_eq!(status, StatusCode::OK);

    let mut agent = Browser::signed_in(&app, "agent@acme.example.com").await;
    let new_password = "a new password 123";
    let (status, body) =
        app.authed(Method::PATCH, &format!("/api/admin/operators/{agent_id}"), &admin, Some(json!({"password": new_password}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(agent.get("/app").await.location.as_deref(), Some("/app/login"), "a new password signs every session out");
}

#[tokio::test]
async fn a_session_is_not_a_bearer_token_nor_a_bearer_token_a_session() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let bearer = app.login("admin@acme.example.com").await;
    let browser = Browser::signed_in(&app, "admin@acme.example.com").await;
    let session = browser.cookies["parley_session"].clone();

    let (status, _) = app.authed(Method::GET, "/api/mobile/conversations", &session, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "a session cookie's token is no bearer token");
    let mut forged = Browser::new(&app);
    forged.cookies.insert("parley_session".into(), bearer);
    assert_eq!(forged.get("/app").await.location.as_deref(), Some("/app/login"), "a bearer token is no session");
}

#[tokio::test]
async fn a_session_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _database) = fresh_database(dir.path(), "sessions.sqlite3").await;
    let first = TestApp::with().var("PARLEY_DATABASE_URL", &url).start().await;
    first.fixture("acme", &[]).await;
    let cookie = Browser::signed_in(&first, "admin@acme.example.com").await.cookies["parley_session"].clone();
    first.stop().await;

    let second = TestApp::with().var("PARLEY_DATABASE_URL", &url).start().await;
    let mut browser = Browser::new(&second);
    browser.cookies.insert("parley_session".into(), cookie);
    browser.inbox("").await;
}

/// Each operator's inbox lists what it may see: an agent its sites' only,
/// another tenant nothing of this one.
#[tokio::test]
async fn an_inbox_shows_only_what_its_operator_may_see() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let eu = app.site("acme-eu", f.scope.tenant, &[]).await;
    let globex = app.fixture("globex", &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    app.operator(&f, "nosite@acme.example.com", Role::Agent, &[]).await;
    let visit = |token: String, name: &'static str| {
        let app = &app;
        async move {
            let (status, body) = app.post("/api/widget/visitors", json!({"token": token, "uuid": name, "name": name})).await;
            assert!(status.is_success(), "{body}");
            app.open_conversation("/api", &token, name, "hi").await;
        }
    };
    visit(f.token.clone(), "main-visitor").await;
    visit(eu.token.clone(), "eu-visitor").await;
    visit(globex.token.clone(), "globex-visitor").await;

    let seen =
        |page: Page| ["main-visitor", "eu-visitor", "globex-visitor"].into_iter().filter(|v| page.html.contains(v)).collect::<Vec<_>>();
    let mut admin = Browser::signed_in(&app, "admin@acme.example.com").await;
    assert_eq!(seen(admin.inbox("").await), ["main-visitor", "eu-visitor"]);
    let mut agent = Browser::signed_in(&app, "agent@acme.example.com").await;
    assert_eq!(seen(agent.inbox("").await), ["main-visitor"], "an agent sees its site only");
    let mut nosite = Browser::signed_in(&app, "nosite@acme.example.com").await;
    assert!(seen(nosite.inbox("").await).is_empty(), "an agent without sites sees nothing");
    let mut other = Browser::signed_in(&app, "admin@globex.example.com").await;
    assert_eq!(seen(other.inbox("").await), ["globex-visitor"], "another tenant sees its own");
}

/// A link opened after the session ended leads, once signed in, to where
/// it pointed; the way back is only ever a page of the app.
#[tokio::test]
async fn signing_in_leads_back_to_the_page_asked_for_and_nowhere_else() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.open_conversation("/api", &f.token, "v1", "hello").await;
    let mut browser = Browser::new(&app);
    let asked = browser.get("/app/conversations/1").await;
    assert_eq!(asked.location.as_deref(), Some("/app/login?next=%2Fapp%2Fconversations%2F1"));
    let form = browser.get("/app/login?next=%2Fapp%2Fconversations%2F1").await;
    assert_eq!(form.field("next"), "/app/conversations/1");
    let csrf = form.field("csrf");
    let fields = [("csrf", csrf.as_str()), ("email", "admin@acme.example.com"), ("password", PASSWORD), ("next", "/app/conversations/1")];
    let answer = browser.post("/app/login", &fields).await;
    assert_eq!((answer.status, answer.location.as_deref()), (StatusCode::SEE_OTHER, Some("/app/conversations/1")));
    let again = browser.get("/app/login?next=%2Fapp%3Fstatus%3Dclosed").await;
    assert_eq!(again.location.as_deref(), Some("/app?status=closed"), "signed in already: straight there");

    for elsewhere in ["https://evil.example/", "//evil.example/app", "/app/../../api", "/api/v1/mobile/me"] {
        let mut browser = Browser::new(&app);
        let form = browser
            .get(&format!("/app/login?next={}", url::form_urlencoded::byte_serialize(elsewhere.as_bytes()).collect::<String>()))
            .await;
        assert!(!form.html.contains("name=\"next\""), "{elsewhere} is not carried");
        let csrf = form.field("csrf");
        let fields = [("csrf", csrf.as_str()), ("email", "admin@acme.example.com"), ("password", PASSWORD), ("next", elsewhere)];
        let answer = browser.post("/app/login", &fields).await;
        assert_eq!(answer.location.as_deref(), Some("/app"), "{elsewhere} is not followed");
    }
}

/// When a session ends, every open tab goes to the sign-in form at once:
/// each tab's form must still be accepted, not only the last one loaded.
#[tokio::test]
async fn sign_in_forms_of_several_tabs_all_work() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let mut browser = Browser::new(&app);
    let first = browser.get("/app/login").await.field("csrf");
    let second = browser.get("/app/login").await.field("csrf");
    assert_eq!(first, second, "the tabs share the cookie's token");
    let answer = browser.post("/app/login", &[("csrf", &first), ("email", "admin@acme.example.com"), ("password", PASSWORD)]).await;
    assert_eq!((answer.status, answer.location.as_deref()), (StatusCode::SEE_OTHER, Some("/app")));

    let mut odd = Browser::new(&app);
    odd.cookies.insert("parley_login_csrf".into(), "lf_\"><script>".into());
    let form = odd.get("/app/login").await;
    assert!(!form.html.contains("<script>") && form.field("csrf").starts_with("lf_"), "a malformed cookie is replaced, never echoed");
}

/// A session lives `PARLEY_SESSION_TTL`, on the server's clock whatever
/// the cookie says.
#[tokio::test]
async fn a_session_ends_when_its_lifetime_is_over() {
    let app = TestApp::with().var("PARLEY_SESSION_TTL", "2h").start().await;
    app.fixture("acme", &[]).await;
    let mut browser = Browser::signed_in(&app, "admin@acme.example.com").await;
    app.clock.advance(std::time::Duration::from_secs(3_600));
    browser.inbox("").await;
    app.clock.advance(std::time::Duration::from_secs(3_601));
    let expired = browser.get("/app").await;
    assert_eq!((expired.status, expired.location.as_deref()), (StatusCode::SEE_OTHER, Some("/app/login")));
    let stream = browser.get("/app/events").await;
    assert_eq!(stream.status, StatusCode::UNAUTHORIZED, "nor can it follow the stream");
}

/// The stylesheet and script are linked by their version: kept for good
/// under it, checked again under any other address.
#[tokio::test]
async fn the_app_files_are_versioned() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let mut browser = Browser::signed_in(&app, "admin@acme.example.com").await;
    let inbox = browser.inbox("").await;
    for (name, kind) in [("app.css", "text/css"), ("live.js", "text/javascript")] {
        let marker = format!("/app/assets/{name}?v=");
        let start = inbox.html.find(&marker).expect("linked with its version") + marker.len();
        let version = &inbox.html[start..start + 24];
        let current = browser.get(&format!("/app/assets/{name}?v={version}")).await;
        assert_eq!(current.status, StatusCode::OK);
        assert!(current.headers["content-type"].to_str().unwrap().starts_with(kind));
        assert_eq!(current.headers["cache-control"], "public, max-age=31536000, immutable");
        let old = browser.get(&format!("/app/assets/{name}?v=0000")).await;
        assert_eq!(old.headers["cache-control"], "no-cache", "an old page's address is checked again");
        let etag = old.headers["etag"].to_str().unwrap().to_owned();
        assert_eq!(etag, format!("\"{version}\""));
        let again = browser.send(Method::GET, &format!("/app/assets/{name}"), None, &[("if-none-match", &etag)]).await;
        assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    }
}

/// What cannot be an email address is refused before any lookup, on
/// both databases alike (a NUL byte is not text PostgreSQL takes).
#[tokio::test]
async fn a_sign_in_with_what_is_not_an_email_is_refused_plainly() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    for email in ["admin\u{0}@acme.example.com", &"a".repeat(60_000), "not an address"] {
        let mut browser = Browser::new(&app);
        let token = browser.get("/app/login").await.field("csrf");
        let answer = browser.post("/app/login", &[("csrf", &token), ("email", email), ("password", PASSWORD)]).await;
        assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", &answer.html[..200.min(answer.html.len())]);
        assert!(answer.html.contains("Enter the email address you sign in with."));
    }
}

/// Pages are compressed for browsers that ask; the live stream is not
/// (a compressor would hold its events back).
#[tokio::test]
async fn pages_are_compressed_and_the_stream_is_not() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let mut browser = Browser::signed_in(&app, "admin@acme.example.com").await;
    let page = browser.send(Method::GET, "/app", None, &[("accept-encoding", "gzip")]).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.headers["content-encoding"], "gzip");
    let cursor = browser.inbox("").await.attr("data-cursor");
    let client = reqwest::Client::new();
    let cookies: Vec<String> = browser.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let stream = client
        .get(app.url(&format!("/app/events?after={cursor}")))
        .header("cookie", cookies.join("; "))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .expect("stream");
    assert_eq!(stream.status(), StatusCode::OK);
    assert!(stream.headers().get("content-encoding").is_none(), "events go out as they happen");
}

/// A browser that signed in before keeps a signed `parley_device` cookie
/// across sign-outs; failures for its operator's email from elsewhere lock
/// out new browsers only.
#[tokio::test]
async fn a_browser_that_signed_in_before_is_not_locked_out_by_someone_elses_failures() {
    let app = TestApp::with().var("PARLEY_RATE_LIMITS", "on").var("PARLEY_TRUSTED_PROXIES", "127.0.0.1").start().await;
    app.fixture("acme", &[]).await;
    let mut own = Browser::new(&app);
    let answer = own.sign_in("admin@acme.example.com", PASSWORD).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    let cookie = answer.cookie("parley_device").expect("a device mark").to_owned();
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/app", "Max-Age=31536000"] {
        assert!(cookie.contains(attribute), "{attribute} in {cookie}");
    }
    let page = own.get("/app").await;
    let logout = own.post("/app/logout", &[("csrf", &page.field("csrf"))]).await;
    assert_eq!(logout.status, StatusCode::SEE_OTHER);
    assert!(own.cookies.contains_key("parley_device"), "kept after signing out");

    for n in 0..5 {
        let body = json!({"email": "admin@acme.example.com", "password": "a guess"});
        let (status, _) = app.send(Method::POST, "/api/mobile/login", Some(body), &[("x-forwarded-for", &format!("198.51.100.{n}"))]).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let mut stranger = Browser::new(&app);
    assert_eq!(stranger.sign_in("admin@acme.example.com", PASSWORD).await.status, StatusCode::TOO_MANY_REQUESTS);
    let mut forged = Browser::new(&app);
    forged.cookies.insert("parley_device".into(), "dm1.forged.0.AAAA".into());
    assert_eq!(forged.sign_in("admin@acme.example.com", PASSWORD).await.status, StatusCode::TOO_MANY_REQUESTS);
    let answer = own.sign_in("admin@acme.example.com", PASSWORD).await;
    assert_eq!((answer.status, answer.location.as_deref()), (StatusCode::SEE_OTHER, Some("/app")), "{}", answer.html);
}

/// The service's address opened in a browser leads to the app, and the
/// icon every page asks for is there.
#[tokio::test]
async fn the_root_leads_to_the_app_and_the_icon_is_served() {
    let app = TestApp::spawn().await;
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let res = client.get(app.url("/")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()["location"], "/app");
    let res = app.client.get(app.url("/favicon.ico")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "image/x-icon");
    assert!(res.headers()["cache-control"].to_str().unwrap().contains("max-age"));
    let icon = res.bytes().await.unwrap();
    assert_eq!(&icon[..4], [0, 0, 1, 0], "an icon file");
    let (status, body) = app.send(Method::POST, "/", None, &[]).await;
    assert_error(status, &body, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
}
