//! `/app/settings`: admins keep the canned responses from the web app,
//! through the same rules as the admin API; agents are refused the page
//! but read the list the reply box offers; another tenant's are out of
//! reach.

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::web_browser::{Browser, Page};

const HERE: &str = "/app/settings/canned";

/// Posts `fields` to `to` with the anti-forgery token of `HERE`.
async fn submit(browser: &mut Browser, to: &str, fields: &[(&str, &str)]) -> Page {
    let page = browser.get(HERE).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.html);
    let csrf = page.field("csrf");
    let mut form = vec![("csrf", csrf.as_str())];
    form.extend_from_slice(fields);
    browser.post(to, &form).await
}

async fn offered(browser: &mut Browser) -> Value {
    let page = browser.get("/app/canned-responses").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.html);
    serde_json::from_str(&page.html).expect("json")
}

#[tokio::test]
async fn admins_add_change_and_delete_canned_responses_in_the_web_app() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let mut admin = Browser::signed_in(&app, "admin@acme.example.com").await;
    let inbox = admin.get("/app").await;
    assert!(inbox.html.contains(r#"href="/app/settings""#), "admins see the settings");

    let added = submit(&mut admin, HERE, &[("shortcut", "Thanks"), ("body", "Thank you for writing!")]).await;
    assert_eq!(added.location.as_deref(), Some("/app/settings/canned?done=added"));
    let page = admin.get("/app/settings/canned?done=added").await;
    assert!(page.html.contains("The canned response is added.") && page.html.contains("/thanks"), "{}", page.html);
    let id = offered(&mut admin).await["canned_responses"][0]["id"].as_i64().unwrap();

    let refused = submit(&mut admin, HERE, &[("shortcut", "THANKS"), ("body", "Again")]).await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert!(refused.html.contains("Another canned response has this shortcut."), "{}", refused.html);
    assert!(refused.html.contains(r#"value="THANKS""#), "what was typed is kept");
    let refused = submit(&mut admin, HERE, &[("shortcut", "two words"), ("body", " ")]).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.html.contains("Shortcut must be letters, digits"), "{}", refused.html);

    let path = format!("{HERE}/{id}");
    let saved = submit(&mut admin, &path, &[("shortcut", "thanks"), ("body", "Thanks, we are on it.")]).await;
    assert_eq!(saved.location.as_deref(), Some("/app/settings/canned?done=saved"));
    let (_, api) = app.authed(Method::GET, "/api/mobile/canned-responses", &app.login("admin@acme.example.com").await, None).await;
    assert_eq!(api["canned_responses"][0]["body"], "Thanks, we are on it.", "the API sees what the page saved");
    let refused = submit(&mut admin, &path, &[("shortcut", "thanks"), ("body", "")]).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.html.contains("Text is required"), "{}", refused.html);

    // Agents read the list the reply box offers, and nothing else.
    let mut agent = Browser::signed_in(&app, "agent@acme.example.com").await;
    assert_eq!(offered(&mut agent).await["canned_responses"][0]["shortcut"], "thanks");
    assert_eq!(agent.get(HERE).await.status, StatusCode::FORBIDDEN);
    assert!(!agent.get("/app").await.html.contains(r#"href="/app/settings""#));
    let csrf = agent.get("/app").await.field("csrf");
    for to in [HERE.to_owned(), path.clone(), format!("{path}/delete")] {
        let page = agent.post(&to, &[("csrf", &csrf), ("shortcut", "x"), ("body", "y")]).await;
        assert_eq!(page.status, StatusCode::FORBIDDEN, "{to}");
    }
    // Another tenant's admin reaches none of them.
    app.fixture("globex", &[]).await;
    let mut globex = Browser::signed_in(&app, "admin@globex.example.com").await;
    assert_eq!(offered(&mut globex).await["canned_responses"], json!([]));
    let csrf = globex.get(HERE).await.field("csrf");
    assert_eq!(globex.post(&format!("{path}/delete"), &[("csrf", &csrf)]).await.status, StatusCode::NOT_FOUND);
    // A form without its token changes nothing.
    assert_eq!(admin.post(&format!("{path}/delete"), &[]).await.status, StatusCode::FORBIDDEN);

    let deleted = submit(&mut admin, &format!("{path}/delete"), &[]).await;
    assert_eq!(deleted.location.as_deref(), Some("/app/settings/canned?done=deleted"));
    assert_eq!(offered(&mut admin).await["canned_responses"], json!([]));
    app.stop().await;
}
