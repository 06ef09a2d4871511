//! Searching conversations: by the words of a message (all in one
//! message, the last one a prefix) or of the visitor's name and email, on both
//! databases' full-text indexes, in the inbox's scope, paged; bad queries
//! are refused.

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::attachments::conversation_id;
use crate::helpers::*;
use crate::web_browser::Browser;

async fn search(app: &TestApp, token: &str, query: &str) -> Value {
    let (status, body) = app.authed(Method::GET, &format!("/api/mobile/search?{query}"), token, None).await;
    assert_eq!(status, StatusCode::OK, "{query}: {body}");
    body
}

/// The public ids of what `q` finds, in order.
async fn found(app: &TestApp, token: &str, q: &str) -> Vec<String> {
    let q: String = url_escape(q);
    let body = search(app, token, &format!("q={q}")).await;
    body["results"].as_array().unwrap().iter().map(|r| r["conversation"]["public_id"].as_str().unwrap().to_owned()).collect()
}

fn url_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn reply(app: &TestApp, token: &str, id: i64, body: &str) {
    let (status, answer) =
        app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/messages"), token, Some(json!({"body": body}))).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}

#[tokio::test]
async fn operators_find_conversations_by_words_and_by_the_visitor() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let visitor = json!({"token": f.token, "uuid": "renee", "name": "Renée Müller", "email": "renee@example.com"});
    assert_eq!(app.post("/api/widget/visitors", visitor).await.0, StatusCode::CREATED);
    let late = app.open_conversation("/api", &f.token, "renee", "My refund for order 1234 is late").await;
    let parcel = app.open_conversation("/api", &f.token, "v2", "Where is my parcel?").await;
    let hello = app.open_conversation("/api", &f.token, "v3", "Hello there").await;
    let parcel_id = conversation_id(&app, &admin, &parcel).await;
    reply(&app, &admin, parcel_id, "Your REFUND was sent yesterday.\nRegards").await;

    assert_eq!(found(&app, &admin, "refund").await, [parcel.clone(), late.clone()], "the latest match first");
    assert_eq!(found(&app, &admin, "Refu").await, [parcel.clone(), late.clone()], "a word's start is enough");
    assert_eq!(found(&app, &admin, "refund late").await, vec![late.clone()], "every word, in one message");
    assert_eq!(found(&app, &admin, "fund").await, Vec::<String>::new(), "inside a word is not a match");
    assert_eq!(found(&app, &admin, "refund ord").await, vec![late.clone()], "the last word may be partial");
    assert_eq!(found(&app, &admin, "refu order").await, Vec::<String>::new(), "the others are whole words");
    assert_eq!(found(&app, &admin, "1234").await, vec![late.clone()]);
    assert_eq!(found(&app, &admin, "renee@example").await, vec![late.clone()], "by the visitor's email");
    assert_eq!(found(&app, &admin, "Müller").await, vec![late.clone()], "by the visitor's name");
    assert_eq!(found(&app, &admin, "100%").await, Vec::<String>::new(), "wildcards are text");
    assert_eq!(found(&app, &admin, "hello").await, vec![hello.clone()]);

    let body = search(&app, &admin, "q=refund").await;
    assert_eq!(body["terms"], json!(["refund"]));
    assert_eq!(body["meta"], json!({"page": 1, "per_page": 20, "more": false}));
    let first = &body["results"][0];
    assert_eq!(first["snippet"], "Your REFUND was sent yesterday. Regards");
    assert!(first["message_id"].as_i64().is_some());
    assert_eq!(first["conversation"]["id"], parcel_id);
    let by_email = search(&app, &admin, "q=renee%40example.com").await;
    assert_eq!((&by_email["results"][0]["message_id"], &by_email["results"][0]["snippet"]), (&Value::Null, &Value::Null));
    let (status, v1) = app.authed(Method::GET, "/api/v1/mobile/search?q=parcel", &admin, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v1["results"][0]["conversation"]["public_id"], parcel.as_str());

    // An erased conversation's words go with it.
    let (status, _) = app.authed(Method::DELETE, &format!("/api/admin/conversations/{parcel_id}"), &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(found(&app, &admin, "refund").await, vec![late.clone()]);
    app.stop().await;
}

/// A search reads matches newest first and stops at its page: SQLite's
/// index hands them over in that order, in growing batches; PostgreSQL
/// reads the latest few hundred messages, then its index. A word said
/// many times in one conversation still lets the others through, in the
/// order of their latest match, and a word said once, before the latest
/// few hundred messages, is still found.
#[tokio::test]
async fn many_matches_and_old_ones_are_found() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let old = app.open_conversation("/api", &f.token, "v-old", "the zebra escaped").await;
    let others: Vec<String> = {
        let mut v = Vec::new();
        for i in 0..3 {
            v.push(app.open_conversation("/api", &f.token, &format!("v-other-{i}"), &format!("kiwi in conversation {i}")).await);
        }
        v
    };
    let chatty = app.open_conversation("/api", &f.token, "v-chatty", "kiwi from the start").await;
    let chatty_id = conversation_id(&app, &admin, &chatty).await;
    for i in 0..150 {
        reply(&app, &admin, chatty_id, &format!("kiwi again, {i}")).await;
    }
    for i in 0..200 {
        reply(&app, &admin, chatty_id, &format!("nothing to see, {i}")).await;
    }
    let expected: Vec<String> = std::iter::once(chatty.clone()).chain(others.iter().rev().cloned()).collect();
    assert_eq!(found(&app, &admin, "kiwi").await, expected, "each once, by its latest match");
    assert_eq!(found(&app, &admin, "zebra").await, vec![old], "an old match behind many newer messages");
    let body = search(&app, &admin, "q=kiwi&per_page=2&page=2").await;
    let page: Vec<&str> = body["results"].as_array().unwrap().iter().map(|r| r["conversation"]["public_id"].as_str().unwrap()).collect();
    assert_eq!(page, [others[1].as_str(), others[0].as_str()]);
    assert_eq!(body["meta"]["more"], false);
    app.stop().await;
}

/// Punctuation separates words on both databases alike: PostgreSQL's own
/// parser would keep an email, a host or a path as one word, which a
/// query of whole words would then miss.
#[tokio::test]
async fn punctuated_words_are_found_on_both_databases() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let m = app.open_conversation("/api", &f.token, "m", "please write to ana@shop.example about order/1234 in v2.5").await;
    let v = json!({"token": f.token, "uuid": "s", "name": "John Smith.Jones", "email": "j/s@x.example"});
    assert_eq!(app.post("/api/widget/visitors", v).await.0, StatusCode::CREATED);
    let s = app.open_conversation("/api", &f.token, "s", "hello").await;
    for (q, want) in [
        ("ana please", &m),
        ("shop about", &m),
        ("1234 order", &m),
        ("v2 5", &m),
        ("smith john", &s),
        ("jones john", &s),
        ("x example", &s),
    ] {
        assert_eq!(found(&app, &admin, q).await, vec![want.clone()], "{q}");
    }
    app.stop().await;
}

/// A conversation found both by its visitor and by a message, beyond the
/// first page's worth of messages, is merged into one result, whichever
/// page it falls on.
#[tokio::test]
async fn a_conversation_found_twice_is_one_result_on_every_page() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let visitor = json!({"token": f.token, "uuid": "lover", "name": "Kiwi Lover"});
    assert_eq!(app.post("/api/widget/visitors", visitor).await.0, StatusCode::CREATED);
    let lover = app.open_conversation("/api", &f.token, "lover", "one kiwi please").await;
    let mut later = Vec::new();
    for i in 0..4 {
        later.push(app.open_conversation("/api", &f.token, &format!("v{i}"), &format!("kiwi number {i}")).await);
    }
    let mut seen = Vec::new();
    for page in 1..=5 {
        let body = search(&app, &admin, &format!("q=kiwi&per_page=1&page={page}")).await;
        let results = body["results"].as_array().unwrap();
        assert_eq!(results.len(), 1, "page {page}: {body}");
        assert_eq!(body["meta"]["more"], page < 5, "page {page}");
        seen.push(results[0]["conversation"]["public_id"].as_str().unwrap().to_owned());
    }
    let expected: Vec<String> = later.iter().rev().cloned().chain(std::iter::once(lover)).collect();
    assert_eq!(seen, expected, "each once, the latest match first");
    app.stop().await;
}

/// The visitor's name and email are searched word by word, the last word
/// the start of one of theirs, through their own index: one that changes its
/// name is found by the new one only.
#[tokio::test]
async fn visitors_are_found_by_the_words_of_their_name_and_email() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let visitor = json!({"token": f.token, "uuid": "ana", "name": "Ana Lucía Pérez", "email": "ana.perez+shop@mail.example"});
    assert_eq!(app.post("/api/widget/visitors", visitor).await.0, StatusCode::CREATED);
    let ana = app.open_conversation("/api", &f.token, "ana", "Hello").await;
    app.open_conversation("/api", &f.token, "someone", "Hello too").await;
    for q in ["ana", "lucía pérez", "Pére", "ana.perez", "perez shop", "mail.example", "ana@mail"] {
        assert_eq!(found(&app, &admin, q).await, vec![ana.clone()], "{q}");
    }
    for q in ["ucía", "perez lucia", "anna", "examples"] {
        assert_eq!(found(&app, &admin, q).await, Vec::<String>::new(), "{q}");
    }
    let renamed = json!({"token": f.token, "uuid": "ana", "name": "Ana Gómez"});
    let (status, body) = app.post("/api/widget/visitors", renamed).await;
    assert!(status.is_success(), "{body}");
    assert_eq!(found(&app, &admin, "gómez").await, vec![ana.clone()]);
    assert_eq!(found(&app, &admin, "lucía").await, Vec::<String>::new(), "the old name is gone from the index");
    app.stop().await;
}

#[tokio::test]
async fn search_sees_what_the_inbox_sees() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let docs = app.site("acme-docs", f.scope.tenant, &[]).await;
    let globex = app.fixture("globex", &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    app.operator(&f, "docs@acme.example.com", Role::Agent, &[docs.scope.site]).await;
    let on_main = app.open_conversation("/api", &f.token, "v1", "the invoice is wrong").await;
    let on_docs = app.open_conversation("/api", &docs.token, "v2", "the invoice page is broken").await;
    let elsewhere = app.open_conversation("/api", &globex.token, "v3", "invoice please").await;
    let admin = app.login("admin@acme.example.com").await;
    let mut all = found(&app, &admin, "invoice").await;
    all.sort();
    let mut expected = vec![on_main.clone(), on_docs.clone()];
    expected.sort();
    assert_eq!(all, expected, "the admin finds its tenant's, not another's");
    assert_eq!(found(&app, &app.login("agent@acme.example.com").await, "invoice").await, [on_main]);
    assert_eq!(found(&app, &app.login("docs@acme.example.com").await, "invoice").await, [on_docs]);
    assert_eq!(found(&app, &app.login("admin@globex.example.com").await, "invoice").await, [elsewhere]);
    let (status, body) = app.send(Method::GET, "/api/mobile/search?q=invoice", None, &[]).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
    app.stop().await;
}

#[tokio::test]
async fn bad_searches_are_refused() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let long = "a".repeat(201);
    for (query, field) in [
        ("", "q"),
        ("q=", "q"),
        ("q=%20%20", "q"),
        ("q=!!%20--", "q"),
        ("q=a%07b", "q"),
        (&format!("q={long}"), "q"),
        ("q=x&page=0", "page"),
        ("q=x&per_page=101", "per_page"),
        ("q=x&per_page=abc", "per_page"),
    ] {
        let (status, body) = app.authed(Method::GET, &format!("/api/mobile/search?{query}"), &admin, None).await;
        assert_fields(status, &body, &[field]);
    }
    app.stop().await;
}

#[tokio::test]
async fn results_come_a_page_at_a_time() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    for i in 0..25 {
        app.open_conversation("/api", &f.token, &format!("v{i}"), &format!("apple number {i}")).await;
    }
    let mut seen = Vec::new();
    for (page, size, more) in [(1, 10, true), (2, 10, true), (3, 5, false)] {
        let body = search(&app, &admin, &format!("q=apple&per_page=10&page={page}")).await;
        assert_eq!(body["meta"], json!({"page": page, "per_page": 10, "more": more}));
        let results = body["results"].as_array().unwrap();
        assert_eq!(results.len(), size);
        seen.extend(results.iter().map(|r| r["conversation"]["id"].as_i64().unwrap()));
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 25, "every one once");
    app.stop().await;
}

#[tokio::test]
async fn the_web_app_searches_the_same_way_and_marks_the_words() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let docs = app.site("acme-docs", f.scope.tenant, &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[docs.scope.site]).await;
    let late = app.open_conversation("/api", &f.token, "v1", "My <b>refund</b> is late").await;
    app.open_conversation("/api", &docs.token, "v2", "Refunds page is empty").await;

    let mut admin = Browser::signed_in(&app, "admin@acme.example.com").await;
    let inbox = admin.get("/app").await;
    assert!(inbox.html.contains(r#"action="/app/search""#), "the inbox has the search form");
    let page = admin.get("/app/search?q=Refund").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("My &lt;b&gt;<mark>refund</mark>&lt;/b&gt; is late"), "{}", page.html);
    assert!(page.html.contains("<mark>Refund</mark>s page is empty"), "{}", page.html);
    let id = conversation_id(&app, &app.login("admin@acme.example.com").await, &late).await;
    assert!(page.html.contains(&format!("/app/conversations/{id}#latest")));

    let mut agent = Browser::signed_in(&app, "agent@acme.example.com").await;
    let page = agent.get("/app/search?q=refund").await;
    assert!(page.html.contains("s page is empty") && !page.html.contains("is late"), "an agent finds its site's only");
    let page = agent.get("/app/search?q=nowhere").await;
    assert!(page.html.contains("Nothing found for “nowhere”."));
    for bad in ["%21%21%21", &"a".repeat(201), "a%07b"] {
        let page = agent.get(&format!("/app/search?q={bad}")).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.html.contains("Type at least one letter or digit"), "{bad}");
    }
    let page = agent.get("/app/search").await;
    assert!(page.html.contains(r#"role="search""#) && !page.html.contains("Nothing found"));
    app.stop().await;
}

/// Both databases find the same: words fold alike (a capital with an
/// accent), accents count, what is not a letter or a digit is no word,
/// and one letter matches whole words only, and no visitor.
#[tokio::test]
async fn both_databases_find_the_same_words() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let visitor = json!({"token": f.token, "uuid": "emile", "name": "ÉMILE ZOLA"});
    assert_eq!(app.post("/api/widget/visitors", visitor).await.0, StatusCode::CREATED);
    let trip = app.open_conversation("/api", &f.token, "emile", "Our İstanbul trip").await;
    let plain = app.open_conversation("/api", &f.token, "v2", "plainhello from Émilie, a fan").await;
    let apples = app.open_conversation("/api", &f.token, "v3", "apples and more apples").await;

    assert_eq!(found(&app, &admin, "TRIP").await, vec![trip.clone()]);
    assert_eq!(found(&app, &admin, "émile").await, vec![trip.clone()], "the visitor's name, whatever its case");
    assert_eq!(found(&app, &admin, "émilie").await, vec![plain.clone()]);
    assert_eq!(found(&app, &admin, "emilie").await, Vec::<String>::new(), "accents count");
    assert_eq!(found(&app, &admin, "plainhello ½").await, vec![plain.clone()], "½ is no word");
    assert_eq!(found(&app, &admin, "a").await, vec![plain.clone()], "one letter: whole words only, and no visitor's name");
    assert_eq!(found(&app, &admin, "ap").await, vec![apples.clone()], "two letters: the start of words");
    app.stop().await;
}
