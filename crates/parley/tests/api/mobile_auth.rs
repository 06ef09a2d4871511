use std::time::Duration;

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn login_returns_a_bearer_token_with_user_and_tenant() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let agent = app.operator(&f, "agent@acme.example", Role::Agent, &[f.scope.site]).await;
    for prefix in PREFIXES {
        let (status, body) = app
            .post(&format!("{prefix}/mobile/login"), json!({"email": "Agent@ACME.example", "password": PASSWORD, "device_name": "Pixel"}))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(body["token"].as_str().unwrap().len() >= 43, "at least 256 bits");
        assert_eq!(body["token_type"], "Bearer");
        assert_eq!(body["expires_at"], "2026-01-31T00:00:00.000Z", "now + 30 days");
        assert_eq!(body["user"]["id"], agent);
        assert_eq!(body["user"]["email"], "agent@acme.example");
        assert_eq!(body["user"]["role"], "agent");
        assert_eq!(body["user"]["site_ids"], json!([f.scope.site.0]));
        assert_eq!(body["tenant"]["slug"], "acme");
        assert!(body["user"].get("password_hash").is_none());

        let token = body["token"].as_str().unwrap();
        let (status, me) = app.authed(Method::GET, &format!("{prefix}/mobile/me"), token, None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(me["user"]["id"], agent);
        assert_eq!(me["tenant"]["slug"], "acme");
    }
}

#[tokio::test]
async fn unknown_email_and_wrong_password_get_the_same_answer() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/mobile/login");
        let (s1, wrong) = app.post(&path, json!({"email": "admin@acme.example.com", "password": "not the password"})).await;
        let (s2, unknown) = app.post(&path, json!({"email": "nobody@acme.example.com", "password": "not the password"})).await;
        assert_error(s1, &wrong, StatusCode::UNAUTHORIZED, "invalid_credentials");
        assert_eq!((s1, &wrong), (s2, &unknown));
    }
}

#[tokio::test]
async fn login_validates_its_fields() {
    let app = TestApp::spawn().await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/mobile/login");
        let (status, body) = app.post(&path, json!({})).await;
        assert_fields(status, &body, &["email", "password"]);
        let (status, body) = app.post(&path, json!({"email": "not-an-email", "password": "", "device_name": "d".repeat(256)})).await;
        assert_fields(status, &body, &["device_name", "email", "password"]);
    }
}

#[tokio::test]
async fn failed_logins_are_throttled_per_email() {
    let app = TestApp::with().var("PARLEY_RATE_LIMITS", "on").start().await;
    app.fixture("acme", &[]).await;
    let email = "admin@acme.example.com";
    for _ in 0..5 {
        let (status, _) = app.post("/api/mobile/login", json!({"email": email, "password": "wrong password"})).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let res = app.client.post(app.url("/api/v1/mobile/login")).json(&json!({"email": email, "password": PASSWORD})).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "even the right password waits");
    let retry: u64 = res.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert_eq!(retry, 900, "the first failure leaves the 15-minute window in 900 s");

    // Refusals this instance remembers, and those it asks the database
    // for again after a few seconds, tell the same time.
    for (step, left) in [(0, 900), (5, 895), (20, 875)] {
        app.clock.advance(Duration::from_secs(step));
        let res = app.client.post(app.url("/api/mobile/login")).json(&json!({"email": email, "password": PASSWORD})).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(res.headers()["retry-after"].to_str().unwrap(), left.to_string());
    }

    app.clock.advance(Duration::from_secs(875));
    let (status, body) = app.post("/api/mobile/login", json!({"email": email, "password": PASSWORD})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn failed_logins_are_throttled_per_client_address() {
    let app = TestApp::with().var("PARLEY_RATE_LIMITS", "on").var("PARLEY_RATE_LIMIT_LOGIN_FAILURES_PER_ADDRESS", "3/15m").start().await;
    app.fixture("acme", &[]).await;
    for n in 0..3 {
        let (status, _) = app.post("/api/mobile/login", json!({"email": format!("guess{n}@acme.example"), "password": "x"})).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let (status, body) = app.post("/api/mobile/login", json!({"email": "admin@acme.example.com", "password": PASSWORD})).await;
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
}

#[tokio::test]
async fn bad_bearer_tokens_are_401() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let token = app.login("admin@acme.example.com").await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/mobile/me");
        for header in
            [None, Some("Basic abc"), Some("Bearer"), Some("Bearer "), Some("Bearer pat_unknown"), Some(&*format!("Bearer {token}x"))]
        {
            let headers: Vec<(&str, &str)> = header.map(|h| vec![("authorization", h)]).unwrap_or_default();
            let res = app.client.get(app.url(&path)).headers(to_headers(&headers)).send().await.unwrap();
            assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{header:?}");
            assert_eq!(res.headers()["www-authenticate"], "Bearer");
            let body: serde_json::Value = res.json().await.unwrap();
            assert_eq!(body["error"]["code"], "unauthenticated");
        }
    }
}

fn to_headers(pairs: &[(&str, &str)]) -> reqwest::header::HeaderMap {
    let mut map = reqwest::header::HeaderMap::new();
    for (k, v) in pairs {
        map.insert(reqwest::header::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
    }
    map
}

#[tokio::test]
async fn tokens_expire_after_their_lifetime() {
    let app = TestApp::with().var("PARLEY_MOBILE_TOKEN_TTL", "1h").start().await;
    app.fixture("acme", &[]).await;
    let token = app.login("admin@acme.example.com").await;
    app.clock.advance(Duration::from_secs(3599));
    let (status, _) = app.authed(Method::GET, "/api/mobile/me", &token, None).await;
    assert_eq!(status, StatusCode::OK);
    app.clock.advance(Duration::from_secs(1));
    let (status, body) = app.authed(Method::GET, "/api/mobile/me", &token, None).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
}

#[tokio::test]
async fn logout_revokes_only_the_token_in_use() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    for prefix in PREFIXES {
        let phone = app.login("admin@acme.example.com").await;
        let tablet = app.login("admin@acme.example.com").await;
        let (status, body) = app.authed(Method::POST, &format!("{prefix}/mobile/logout"), &phone, None).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
        let (status, _) = app.authed(Method::GET, &format!("{prefix}/mobile/me"), &phone, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, _) = app.authed(Method::POST, &format!("{prefix}/mobile/logout"), &phone, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "a revoked token cannot log out again");
        let (status, _) = app.authed(Method::GET, &format!("{prefix}/mobile/me"), &tablet, None).await;
        assert_eq!(status, StatusCode::OK);
    }
}

#[tokio::test]
async fn disabling_an_operator_revokes_all_its_tokens() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let agent = app.operator(&f, "agent@acme.example", Role::Agent, &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let tokens = [app.login("agent@acme.example").await, app.login("agent@acme.example").await];
    let (status, body) =
        app.authed(Method::PATCH, &format!("/api/v1/admin/operators/{agent}"), &admin, Some(json!({"active": false}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["operator"]["active"], false);
    for t in &tokens {
        let (status, _) = app.authed(Method::GET, "/api/mobile/me", t, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let (status, body) = app.post("/api/mobile/login", json!({"email": "agent@acme.example", "password": PASSWORD})).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "invalid_credentials");

    app.authed(Method::PATCH, &format!("/api/admin/operators/{agent}"), &admin, Some(json!({"active": true}))).await;
    for t in &tokens {
        let (status, _) = app.authed(Method::GET, "/api/mobile/me", t, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "re-enabling does not bring old tokens back");
    }
    app.login("agent@acme.example").await;
}

#[tokio::test]
async fn changing_a_password_revokes_all_tokens() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let agent = app.operator(&f, "agent@acme.example", Role::Agent, &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let old = app.login("agent@acme.example").await;
    let (status, _) = app
        .authed(Method::PATCH, &format!("/api/admin/operators/{agent}"), &admin, Some(json!({"password": "a brand new password"})))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app.authed(Method::GET, "/api/mobile/me", &old, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = app.post("/api/mobile/login", json!({"email": "agent@acme.example", "password": PASSWORD})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = app.post("/api/mobile/login", json!({"email": "agent@acme.example", "password": "a brand new password"})).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app.authed(Method::GET, "/api/mobile/me", &admin, None).await;
    assert_eq!(status, StatusCode::OK, "other operators keep their tokens");
}

/// Parallel wrong passwords for one email, each from another address: only
/// the allowed number are evaluated, the rest are refused before any
/// password check.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_failed_logins_cannot_slip_under_the_limit() {
    let app = std::sync::Arc::new(TestApp::with().var("PARLEY_RATE_LIMITS", "on").var("PARLEY_TRUSTED_PROXIES", "127.0.0.1").start().await);
    app.fixture("acme", &[]).await;
    let mut attempts = Vec::new();
    for n in 0..40 {
        let app = app.clone();
        attempts.push(tokio::spawn(async move {
            let body = json!({"email": "admin@acme.example.com", "password": "wrong password"});
            let client = format!("198.51.100.{n}");
            app.send(Method::POST, "/api/mobile/login", Some(body), &[("x-forwarded-for", &client)]).await.0
        }));
    }
    let mut evaluated = 0;
    let mut refused = 0;
    for a in attempts {
        match a.await.unwrap() {
            StatusCode::UNAUTHORIZED => evaluated += 1,
            StatusCode::TOO_MANY_REQUESTS => refused += 1,
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!((evaluated, refused), (5, 35));
}

/// Behind a proxy that appends its own `X-Forwarded-For` line, a client
/// cannot escape the per-address limit by writing a first line itself.
#[tokio::test]
async fn forged_forwarded_for_lines_do_not_escape_the_address_limit() {
    let app = TestApp::with()
        .var("PARLEY_RATE_LIMITS", "on")
        .var("PARLEY_TRUSTED_PROXIES", "127.0.0.1")
        .var("PARLEY_RATE_LIMIT_LOGIN_FAILURES_PER_ADDRESS", "20/15m")
        .start()
        .await;
    app.fixture("acme", &[]).await;
    let mut limited = None;
    for n in 0..25 {
        let mut req =
            app.client.post(app.url("/api/mobile/login")).json(&json!({"email": format!("guess{n}@acme.example"), "password": "x"}));
        // Two header lines, as HAProxy's `option forwardfor` sends them.
        req = req.header("x-forwarded-for", format!("6.6.{n}.6")).header("x-forwarded-for", "203.0.113.9:41234");
        let status = req.send().await.unwrap().status();
        if status == StatusCode::TOO_MANY_REQUESTS {
            limited = Some(n);
            break;
        }
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(limited, Some(20), "the 21st failure from the real client is refused");
}

/// An IPv6 client owns a whole /64: changing the last 64 bits does not
/// make it another client.
#[tokio::test]
async fn ipv6_clients_are_limited_by_their_64() {
    let app = TestApp::with()
        .var("PARLEY_RATE_LIMITS", "on")
        .var("PARLEY_TRUSTED_PROXIES", "127.0.0.1")
        .var("PARLEY_RATE_LIMIT_LOGIN_FAILURES_PER_ADDRESS", "3/15m")
        .start()
        .await;
    app.fixture("acme", &[]).await;
    let app = &app;
    let attempt = |n: u32, prefix: &'static str| {
        let client = format!("[{prefix}{n:x}]:443");
        let body = json!({"email": format!("guess{n}@acme.example"), "password": "x"});
        async move { app.send(Method::POST, "/api/mobile/login", Some(body), &[("x-forwarded-for", &client)]).await.0 }
    };
    for n in 1..=3 {
        assert_eq!(attempt(n, "2001:db8:1:2::").await, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(attempt(99, "2001:db8:1:2:ffff::").await, StatusCode::TOO_MANY_REQUESTS, "the same /64");
    assert_eq!(attempt(1, "2001:db8:1:3::").await, StatusCode::UNAUTHORIZED, "another /64 is another client");
}

/// Right passwords cost a password check too: they are limited per
/// address, so one client cannot keep the checks busy with its own login.
#[tokio::test]
async fn successful_logins_are_limited_per_address() {
    let app = TestApp::with().var("PARLEY_RATE_LIMITS", "on").var("PARLEY_RATE_LIMIT_LOGINS_PER_ADDRESS", "3/15m").start().await;
    app.fixture("acme", &[]).await;
    for _ in 0..3 {
        app.login("admin@acme.example.com").await;
    }
    let (status, body) = app.post("/api/mobile/login", json!({"email": "admin@acme.example.com", "password": PASSWORD})).await;
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
}

/// A sign-in from `client` (behind the trusted proxy), with a device mark
/// or none: its status, and the new mark when it succeeds.
async fn sign_in_from(app: &TestApp, client: &str, email: &str, password: &str, device: Option<&str>) -> (StatusCode, Option<String>) {
    let mut body = json!({"email": email, "password": password});
    if let Some(device) = device {
        body["device_id"] = json!(device);
    }
    let (status, answer) = app.send(Method::POST, "/api/v1/mobile/login", Some(body), &[("x-forwarded-for", client)]).await;
    (status, answer["device_id"].as_str().map(str::to_owned))
}

/// Failures for one email from many addresses lock that email only for
/// devices that have not signed in to it before: the operator's own app,
/// sending back the `device_id` of its last sign-in, is judged by the
/// failures made with that mark alone, whatever the address (an office
/// behind the attacker's NAT included). A mark of another account, or
/// one altered, counts as none.
#[tokio::test]
async fn a_lockout_aimed_at_an_email_does_not_reach_a_device_that_signed_in_before() {
    let app = TestApp::with().var("PARLEY_RATE_LIMITS", "on").var("PARLEY_TRUSTED_PROXIES", "127.0.0.1").start().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[]).await;
    let admin = "admin@acme.example.com";
    let (status, mark) = sign_in_from(&app, "203.0.113.1", admin, PASSWORD, None).await;
    assert_eq!(status, StatusCode::OK);
    let mark = mark.expect("a device_id comes with every sign-in");
    let (_, agents_mark) = sign_in_from(&app, "203.0.113.2", "agent@acme.example.com", PASSWORD, None).await;
    let agents_mark = agents_mark.unwrap();

    // Someone else, from five addresses (and one of them the office's).
    for n in 0..4 {
        let (status, _) = sign_in_from(&app, &format!("198.51.100.{n}"), admin, "a guess", None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(sign_in_from(&app, "203.0.113.1", admin, "a guess", None).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(sign_in_from(&app, "192.0.2.50", admin, PASSWORD, None).await.0, StatusCode::TOO_MANY_REQUESTS, "a new device waits");
    assert_eq!(sign_in_from(&app, "192.0.2.50", admin, PASSWORD, Some(&agents_mark)).await.0, StatusCode::TOO_MANY_REQUESTS);
    let mut altered = mark.clone();
    altered.pop();
    altered.push(if mark.ends_with('A') { 'B' } else { 'A' });
    assert_eq!(sign_in_from(&app, "192.0.2.50", admin, PASSWORD, Some(&altered)).await.0, StatusCode::TOO_MANY_REQUESTS);

    let (status, next_mark) = sign_in_from(&app, "203.0.113.1", admin, PASSWORD, Some(&mark)).await;
    assert_eq!(status, StatusCode::OK, "the operator's own app signs in");
    let next_mark = next_mark.unwrap();
    assert_ne!(next_mark, mark, "with a new mark");
    let (status, _) = sign_in_from(&app, "192.0.2.51", admin, PASSWORD, Some(&mark)).await;
    assert_eq!(status, StatusCode::OK, "from any address, and the older mark still holds");
    assert_eq!(sign_in_from(&app, "192.0.2.50", admin, PASSWORD, None).await.0, StatusCode::TOO_MANY_REQUESTS, "new devices still wait");

    // The marked device's own failures judge it.
    for _ in 0..5 {
        assert_eq!(sign_in_from(&app, "203.0.113.1", admin, "a typo", Some(&next_mark)).await.0, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(sign_in_from(&app, "203.0.113.1", admin, PASSWORD, Some(&next_mark)).await.0, StatusCode::TOO_MANY_REQUESTS);

    // A device_id that cannot be one is a bad request.
    for bad in [json!(""), json!("x".repeat(129)), json!("dm1 with spaces"), json!(7)] {
        let body = json!({"email": admin, "password": PASSWORD, "device_id": bad});
        let (status, answer) = app.send(Method::POST, "/api/v1/mobile/login", Some(body), &[("x-forwarded-for", "192.0.2.99")]).await;
        assert_fields(status, &answer, &["device_id"]);
    }
}

/// One address that fails for several operators' emails keeps none of
/// them out of the devices they signed in with before.
#[tokio::test]
async fn one_address_cannot_keep_operators_out_of_their_own_devices() {
    let app = TestApp::with().var("PARLEY_RATE_LIMITS", "on").var("PARLEY_TRUSTED_PROXIES", "127.0.0.1").start().await;
    let f = app.fixture("acme", &[]).await;
    let emails: Vec<String> = (0..4).map(|n| format!("op{n}@acme.example.com")).collect();
    let mut marks = Vec::new();
    for email in &emails {
        app.operator(&f, email, Role::Agent, &[]).await;
        marks.push(sign_in_from(&app, "203.0.113.7", email, PASSWORD, None).await.1.unwrap());
    }
    for email in &emails {
        for _ in 0..5 {
            assert_eq!(sign_in_from(&app, "198.51.100.66", email, "a guess", None).await.0, StatusCode::UNAUTHORIZED);
        }
    }
    for (email, mark) in emails.iter().zip(&marks) {
        assert_eq!(sign_in_from(&app, "203.0.113.7", email, PASSWORD, None).await.0, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(sign_in_from(&app, "203.0.113.7", email, PASSWORD, Some(mark)).await.0, StatusCode::OK, "{email}");
    }
}

/// A mark is bound to the password it signed in with: after a new
/// password, a device that signed in with the old one is a stranger
/// again, so whoever signed in with a stolen password keeps no allowance
/// of guesses past the lockout.
#[tokio::test]
async fn a_new_password_ends_the_marks_made_with_the_old_one() {
    let app = TestApp::with().var("PARLEY_RATE_LIMITS", "on").var("PARLEY_TRUSTED_PROXIES", "127.0.0.1").start().await;
    let f = app.fixture("acme", &[]).await;
    let ann = app.operator(&f, "ann@acme.example.com", Role::Agent, &[]).await;
    let (_, old_mark) = sign_in_from(&app, "203.0.113.1", "ann@acme.example.com", PASSWORD, None).await;
    let old_mark = old_mark.unwrap();
    let admin = app.login("admin@acme.example.com").await;
    let (status, body) =
        app.authed(Method::PATCH, &format!("/api/admin/operators/{ann}"), &admin, Some(json!({"password": "a brand new password"}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for n in 0..5 {
        let (status, _) = sign_in_from(&app, &format!("198.51.100.{n}"), "ann@acme.example.com", "a guess", None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let (status, _) = sign_in_from(&app, "203.0.113.1", "ann@acme.example.com", "a brand new password", Some(&old_mark)).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "the old mark counts for nothing");
}

/// A right password clears the failures of the account it proved, never
/// those of the address it came from: someone guessing from one address
/// cannot reset the address's count by signing in to an account of their
/// own now and then.
#[tokio::test]
async fn signing_in_to_ones_own_account_does_not_reset_the_address() {
    let app = TestApp::with()
        .var("PARLEY_RATE_LIMITS", "on")
        .var("PARLEY_TRUSTED_PROXIES", "127.0.0.1")
        .var("PARLEY_RATE_LIMIT_LOGIN_FAILURES_PER_ADDRESS", "20/15m")
        .start()
        .await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "mallory@acme.example.com", Role::Agent, &[]).await;
    let from = "198.51.100.77";
    for n in 0..19 {
        assert_eq!(sign_in_from(&app, from, &format!("guess{n}@acme.example.com"), "a guess", None).await.0, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(sign_in_from(&app, from, "mallory@acme.example.com", PASSWORD, None).await.0, StatusCode::OK);
    assert_eq!(sign_in_from(&app, from, "guess19@acme.example.com", "a guess", None).await.0, StatusCode::UNAUTHORIZED, "the 20th");
    assert_eq!(
        sign_in_from(&app, from, "guess20@acme.example.com", "a guess", None).await.0,
        StatusCode::TOO_MANY_REQUESTS,
        "the address kept its failures"
    );
}
