//! The feed through the operators' catch-up (`GET mobile/events`): what
//! an app resuming from the background fetches, who sees what, cursors
//! that are no longer served, long polling, and the ordering promise
//! under concurrent writers on both databases.

use std::collections::BTreeMap;
use std::time::Duration;

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

async fn catch_up(app: &TestApp, token: &str, after: &str) -> Value {
    let (status, body) = app.authed(Method::GET, &format!("/api/mobile/events?after={after}"), token, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

async fn head(app: &TestApp, token: &str) -> String {
    let (status, body) = app.authed(Method::GET, "/api/mobile/conversations", token, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["meta"]["cursor"].as_str().expect("meta.cursor").to_owned()
}

/// Every event after `after`, page after page, once at least `n` have
/// become readable. On PostgreSQL an entry is readable once every
/// transaction of the database older than its own has ended (the app's
/// own background work included), so a read right after a commit may not
/// show it yet.
async fn settled(app: &TestApp, token: &str, after: &str, n: usize) -> Value {
    eventually(|| async {
        let (mut events, mut cursor) = (Vec::new(), after.to_owned());
        loop {
            let body = catch_up(app, token, &cursor).await;
            let page = body["events"].as_array().unwrap().clone();
            cursor = body["cursor"].as_str().unwrap().to_owned();
            if page.is_empty() {
                break;
            }
            events.extend(page);
        }
        (events.len() >= n).then(|| json!({"events": events, "cursor": cursor}))
    })
    .await
}

fn kinds(body: &Value) -> Vec<String> {
    body["events"].as_array().unwrap().iter().map(|e| e["event"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn an_operator_catches_up_with_what_happened_since_its_cursor() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    for prefix in PREFIXES {
        let (status, body) = app.authed(Method::GET, &format!("{prefix}/mobile/events"), &admin, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["events"], json!([]), "without `after`, only where to start");
        assert!(body["cursor"].is_string());
    }
    let start = head(&app, &admin).await;

    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let id = list["conversations"][0]["id"].as_i64().unwrap();
    app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/assign"), &admin, None).await;
    app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/messages"), &admin, Some(json!({"body": "hi, how can I help?"})))
        .await;
    app.post_message("/api", &f.token, &public_id, "my order").await;
    app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/close"), &admin, None).await;

    let body = settled(&app, &admin, &start, 8).await;
    assert_eq!(
        kinds(&body),
        [
            "conversation.created",
            "message.created",
            "conversation.updated",
            "message.created",
            "message.created",
            "message.created",
            "message.created",
            "conversation.updated"
        ]
    );
    let events = body["events"].as_array().unwrap();
    assert_eq!(events[1]["data"]["message"]["body"], "hello");
    // Each event carries the conversation as it is now: an app applies
    // the latest state whichever event it reads first.
    assert_eq!(events[2]["data"]["conversation"]["status"], "closed");
    assert_eq!(events[3]["data"]["message"]["sender"]["type"], "system", "the join line");
    assert_eq!(events[4]["data"]["message"]["body"], "hi, how can I help?");
    assert_eq!(events[7]["data"]["conversation"]["status"], "closed");
    for e in events {
        assert_eq!(e["data"]["conversation"]["id"], id);
        assert!(e["occurred_at"].is_string() && e["cursor"].is_string(), "{e}");
    }
    assert_eq!(body["cursor"], events[7]["cursor"], "the next call starts after the last event");

    // From the middle: exactly the rest, and nothing after the end.
    let middle = events[3]["cursor"].as_str().unwrap();
    assert_eq!(kinds(&catch_up(&app, &admin, middle).await).len(), 4);
    let end = catch_up(&app, &admin, body["cursor"].as_str().unwrap()).await;
    assert_eq!(end["events"], json!([]));
    assert_eq!(end["cursor"], body["cursor"]);
}

#[tokio::test]
async fn notes_reach_operators_and_each_sees_only_its_own_sites_and_tenant() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let other_site = app.site("acme-eu", f.scope.tenant, &[]).await;
    let other_tenant = app.fixture("globex", &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    app.operator(&f, "eu@acme.example.com", Role::Agent, &[other_site.scope.site]).await;
    let (admin, agent, eu, globex) = (
        app.login("admin@acme.example.com").await,
        app.login("agent@acme.example.com").await,
        app.login("eu@acme.example.com").await,
        app.login("admin@globex.example.com").await,
    );
    let starts = [head(&app, &admin).await, head(&app, &agent).await, head(&app, &eu).await, head(&app, &globex).await];

    app.open_conversation("/api", &f.token, "v1", "on the main site").await;
    app.open_conversation("/api", &other_tenant.token, "v2", "at globex").await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &agent, None).await;
    let id = list["conversations"][0]["id"].as_i64().unwrap();
    let (_, me) = app.authed(Method::GET, "/api/mobile/me", &agent, None).await;
    app.transfer_with_note(&admin, id, me["user"]["id"].clone(), "VIP, be nice").await;

    let seen = |body: &Value| -> Vec<String> {
        body["events"].as_array().unwrap().iter().map(|e| e["data"]["message"]["body"].as_str().unwrap_or("-").to_owned()).collect()
    };
    let admin_sees = seen(&settled(&app, &admin, &starts[0], 5).await);
    assert!(admin_sees.contains(&"VIP, be nice".to_owned()), "notes reach operators: {admin_sees:?}");
    assert!(!admin_sees.contains(&"at globex".to_owned()), "another tenant's conversation never: {admin_sees:?}");
    assert_eq!(seen(&catch_up(&app, &agent, &starts[1]).await), admin_sees, "the agent of the site sees the same");
    assert_eq!(catch_up(&app, &eu, &starts[2]).await["events"], json!([]), "an agent without the site sees nothing");
    let globex_sees = seen(&settled(&app, &globex, &starts[3], 2).await);
    assert_eq!(globex_sees, ["at globex", "at globex"], "created and its first message, nothing of acme");

    // A cursor of another tenant's feed is unknown here.
    let acme_end = settled(&app, &admin, &starts[0], 5).await["cursor"].as_str().unwrap().to_owned();
    let (status, body) = app.authed(Method::GET, &format!("/api/mobile/events?after={acme_end}"), &globex, None).await;
    assert_error(status, &body, StatusCode::GONE, "cursor_expired");
}

#[tokio::test]
async fn old_unknown_and_malformed_cursors_and_bad_waits_are_refused() {
    let app = TestApp::with().var("PARLEY_EVENT_RETENTION", "1d").start().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let before = head(&app, &admin).await;
    app.open_conversation("/api", &f.token, "v1", "hello").await;
    // The head once both entries of the opening are readable.
    let start = settled(&app, &admin, &before, 2).await["cursor"].as_str().unwrap().to_owned();

    for bad in ["nope", "1-2", "1-2-3-4", "a-b-c%0A", &"1".repeat(70)] {
        let (status, body) = app.authed(Method::GET, &format!("/api/mobile/events?after={bad}"), &admin, None).await;
        assert_fields(status, &body, &["after"]);
    }
    for bad in ["-1", "31", "1.5", "x"] {
        let (status, body) = app.authed(Method::GET, &format!("/api/mobile/events?after={start}&wait={bad}"), &admin, None).await;
        assert_fields(status, &body, &["wait"]);
    }
    let unknown = "zz-zz-".to_owned() + start.rsplit('-').next().unwrap();
    let (status, body) = app.authed(Method::GET, &format!("/api/mobile/events?after={unknown}"), &admin, None).await;
    assert_error(status, &body, StatusCode::GONE, "cursor_expired");

    // The head is served whatever its age (a quiet tenant's newest entry
    // may be old); a cursor behind it, once too old, is not.
    app.clock.advance(Duration::from_secs(86_400 + 1));
    let (status, body) = app.authed(Method::GET, &format!("/api/mobile/events?after={start}"), &admin, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    app.open_conversation("/api", &f.token, "v2", "later").await;
    // Once the new entries are readable, the old cursor is behind the head.
    let (status, body) = eventually(|| async {
        let (status, body) = app.authed(Method::GET, &format!("/api/mobile/events?after={start}"), &admin, None).await;
        (status != StatusCode::OK).then_some((status, body))
    })
    .await;
    assert_error(status, &body, StatusCode::GONE, "cursor_expired");

    let (status, body) = app.send(Method::GET, "/api/mobile/events", None, &[]).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_returns_when_an_event_arrives() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let start = head(&app, &admin).await;
    let url = app.url(&format!("/api/mobile/events?after={start}&wait=30"));
    let client = app.client.clone();
    let auth = format!("Bearer {admin}");
    let waiting =
        tokio::spawn(async move { client.get(url).header("authorization", auth).send().await.unwrap().json::<Value>().await.unwrap() });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiting.is_finished(), "held while nothing happens");
    app.open_conversation("/api", &f.token, "v1", "hello").await;
    let body = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("answered long before 30 s").unwrap();
    assert_eq!(kinds(&body)[0], "conversation.created");
}

/// Writers on many conversations at once while a follower pages through
/// the feed: it sees every message exactly once, in each conversation's
/// order, although on PostgreSQL transactions commit out of the order
/// they took their ids in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_sees_every_entry_once_while_writers_run_concurrently() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let mut cursor = head(&app, &admin).await;
    let conversations: Vec<String> = {
        let mut list = Vec::new();
        for v in 0..8 {
            list.push(app.open_conversation("/api", &f.token, &format!("v{v}"), "start").await);
        }
        list
    };
    let mut writers = Vec::new();
    for public_id in conversations.clone() {
        let (client, base, token) = (app.client.clone(), app.url(""), f.token.clone());
        writers.push(tokio::spawn(async move {
            for n in 0..25 {
                let res = client
                    .post(format!("{base}/api/widget/conversations/{public_id}/messages"))
                    .json(&json!({"token": token, "body": format!("{public_id} {n}")}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(res.status(), StatusCode::CREATED);
            }
        }));
    }
    let mut seen: BTreeMap<i64, usize> = BTreeMap::new();
    let mut bodies: Vec<String> = Vec::new();
    let follow = |body: &Value, seen: &mut BTreeMap<i64, usize>, bodies: &mut Vec<String>| {
        for e in body["events"].as_array().unwrap() {
            if e["event"] == "message.created" {
                *seen.entry(e["data"]["message"]["id"].as_i64().unwrap()).or_default() += 1;
                bodies.push(e["data"]["message"]["body"].as_str().unwrap().to_owned());
            }
        }
    };
    while !writers.iter().all(|w| w.is_finished()) {
        let body = catch_up(&app, &admin, &cursor).await;
        follow(&body, &mut seen, &mut bodies);
        cursor = body["cursor"].as_str().unwrap().to_owned();
    }
    for w in writers {
        w.await.unwrap();
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while seen.len() < 8 * 26 && tokio::time::Instant::now() < deadline {
        let body = catch_up(&app, &admin, &cursor).await;
        follow(&body, &mut seen, &mut bodies);
        cursor = body["cursor"].as_str().unwrap().to_owned();
    }
    let late = catch_up(&app, &admin, &cursor).await;
    assert_eq!(late["events"], json!([]), "nothing after the last");
    assert_eq!(seen.len(), 8 * 26, "every message (with each first one) once: {} seen", seen.len());
    assert!(seen.values().all(|n| *n == 1), "no message twice");
    for public_id in &conversations {
        let mine: Vec<&String> = bodies.iter().filter(|b| b.starts_with(public_id.as_str())).collect();
        let expected: Vec<String> = (0..25).map(|n| format!("{public_id} {n}")).collect();
        assert_eq!(mine, expected.iter().collect::<Vec<_>>(), "each conversation in its order");
    }
}

/// A session holding a transaction open (it has taken a transaction id,
/// as any write does) until committed.
struct OpenTransaction(Option<postgres::Client>);

impl OpenTransaction {
    async fn begin(url: &str) -> Self {
        let url = url.to_owned();
        let client = tokio::task::spawn_blocking(move || {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
            client.batch_execute("SET application_name = 'held open'; BEGIN; SELECT pg_current_xact_id();").expect("begin");
            client
        })
        .await
        .expect("blocking task");
        Self(Some(client))
    }

    async fn commit(mut self) {
        let mut client = self.0.take().expect("open");
        tokio::task::spawn_blocking(move || client.batch_execute("COMMIT").expect("commit")).await.expect("blocking task");
    }
}

impl Drop for OpenTransaction {
    fn drop(&mut self) {
        // A failed test must not leave it open for the rest of the suite.
        if let Some(client) = self.0.take() {
            std::thread::spawn(move || drop(client));
        }
    }
}

fn held_back_seconds(metrics: &str) -> f64 {
    gauge(metrics, "parley_feed_held_back_seconds")
}

/// Waits for the gauge to read zero. The bound errs late by design: a
/// transaction of another database that ends between the snapshot and
/// the read of `pg_stat_activity` counts as this database's for that one
/// statement, and the suite's other tests run such transactions all the
/// time, so a single scrape may still see an entry waiting.
async fn nothing_held_back(app: &TestApp) {
    eventually(|| async { (held_back_seconds(&scrape_metrics(app).await) == 0.0).then_some(()) }).await;
}

/// On PostgreSQL an entry waits for every transaction of Parley's database
/// that began writing before it: one left open in another database of the
/// server does not hold the feed back, one in Parley's own does until it
/// ends, and `/metrics` shows how long the entry has waited.
#[tokio::test]
async fn only_a_transaction_in_parleys_own_database_holds_the_feed_back() {
    let Some(server) = parley_storage::testing::postgres_url() else { return };
    let app = TestApp::with().var("PARLEY_METRICS_TOKEN", METRICS_TOKEN).start().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let start = head(&app, &admin).await;

    let elsewhere = OpenTransaction::begin(&server).await;
    app.open_conversation("/api", &f.token, "v1", "first").await;
    let body = settled(&app, &admin, &start, 2).await;
    assert_eq!(kinds(&body), ["conversation.created", "message.created"], "not held back by another database");
    let cursor = body["cursor"].as_str().unwrap().to_owned();
    nothing_held_back(&app).await;

    let here = OpenTransaction::begin(&app.database_url).await;
    app.open_conversation("/api", &f.token, "v2", "second").await;
    assert_eq!(catch_up(&app, &admin, &cursor).await["events"], json!([]), "held back by a transaction of its own database");
    app.clock.advance(Duration::from_secs(7));
    assert_eq!(held_back_seconds(&scrape_metrics(&app).await), 7.0, "the gauge shows how long it has waited");

    here.commit().await;
    let body = settled(&app, &admin, &cursor, 2).await;
    assert_eq!(kinds(&body), ["conversation.created", "message.created"], "readable once it ended");
    nothing_held_back(&app).await;
    elsewhere.commit().await;
}

/// Waits until the instance holds `n` streams or long polls.
async fn held(app: &TestApp, n: u32) {
    eventually(|| async { (gauge(&scrape_metrics(app).await, "parley_streams_open") == f64::from(n)).then_some(()) }).await;
}

/// A long poll started with `token` and waiting up to 30 s.
fn long_poll(app: &TestApp, token: &str, after: &str) -> tokio::task::JoinHandle<(StatusCode, Value)> {
    let request =
        app.client.get(app.url(&format!("/api/mobile/events?after={after}&wait=30"))).header("authorization", format!("Bearer {token}"));
    tokio::spawn(async move {
        let res = request.send().await.expect("answered");
        let status = res.status();
        (status, res.json::<Value>().await.unwrap_or(Value::Null))
    })
}

/// A waiting long poll re-checks its token while it waits: whatever ends
/// the token (logout, a new password, disabling the operator, revoking
/// it), the poll answers 401 within the recheck time (the keep-alive
/// here, 5 s at most), with nothing committed meanwhile to wake it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_long_poll_answers_401_once_its_token_ends() {
    let app = TestApp::with().var("PARLEY_STREAM_KEEPALIVE", "200ms").var("PARLEY_METRICS_TOKEN", METRICS_TOKEN).start().await;
    let f = app.fixture("acme", &[]).await;
    let (admin, ways) = ending_tokens(&app, &f).await;
    let start = head(&app, &admin).await;
    let polls: Vec<_> = ways.iter().map(|(token, _)| long_poll(&app, token, &start)).collect();
    held(&app, 4).await;
    assert!(polls.iter().all(|p| !p.is_finished()), "held while nothing happens");
    for (token, ending) in &ways {
        end_token(&app, &admin, token, ending).await;
    }
    for poll in polls {
        let (status, body) = tokio::time::timeout(Duration::from_secs(5), poll).await.expect("answered within 5 s").unwrap();
        assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
    }
}

/// An entry committed after a token ended never reaches a long poll of
/// that token, even when that entry is what wakes it: with the recheck at
/// its 5 s, the poll is checked once more after reading and answers 401
/// at once, not 200 with the entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_never_answers_an_entry_committed_after_its_token_ended() {
    let app = TestApp::with().var("PARLEY_METRICS_TOKEN", METRICS_TOKEN).start().await;
    let f = app.fixture("acme", &[]).await;
    let (admin, ways) = ending_tokens(&app, &f).await;
    let mut start = head(&app, &admin).await;
    for (token, ending) in ways {
        let poll = long_poll(&app, &token, &start);
        held(&app, 1).await;
        assert!(!poll.is_finished(), "held while nothing happens");
        end_token(&app, &admin, &token, &ending).await;
        app.open_conversation("/api", &f.token, &format!("v-{}", &token[..12]), "after the revocation").await;
        let (status, body) = tokio::time::timeout(Duration::from_secs(3), poll).await.expect("answered before the recheck").unwrap();
        assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
        // The next poll starts once this round's two entries are readable:
        // on PostgreSQL one still held back by the app's own background
        // work would otherwise answer it before its token ends.
        start = settled(&app, &admin, &start, 2).await["cursor"].as_str().unwrap().to_owned();
    }
}

/// Long polls are streams to the per-address bound: each holds a
/// connection and a watch for as long as it waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_polls_count_against_the_streams_of_an_address() {
    let app = TestApp::with().var("PARLEY_STREAMS_PER_ADDRESS", "2").var("PARLEY_METRICS_TOKEN", METRICS_TOKEN).start().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let start = head(&app, &admin).await;
    let polls = [long_poll(&app, &admin, &start), long_poll(&app, &admin, &start)];
    eventually(|| async { (gauge(&scrape_metrics(&app).await, "parley_streams_open") == 2.0).then_some(()) }).await;
    let (status, body) = app.authed(Method::GET, &format!("/api/mobile/events?after={start}&wait=30"), &admin, None).await;
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    let (status, body) = app
        .send(Method::GET, "/api/mobile/events", None, &[("accept", "text/event-stream"), ("authorization", &format!("Bearer {admin}"))])
        .await;
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    // A catch-up that does not wait holds nothing and is answered.
    let (status, body) = app.authed(Method::GET, &format!("/api/mobile/events?after={start}"), &admin, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    app.open_conversation("/api", &f.token, "v1", "hello").await;
    for poll in polls {
        let (status, body) = tokio::time::timeout(Duration::from_secs(10), poll).await.expect("answered").unwrap();
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    // Their places are free again.
    let (status, body) = app.authed(Method::GET, &format!("/api/mobile/events?after={start}&wait=1"), &admin, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}
