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

#[tokio::test]
async fn the_api_changes_a_sites_name_domains_and_look_and_refuses_bad_values() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &["acme.example"]).await;
    let globex = app.fixture("globex", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let path = format!("/api/v1/admin/sites/{}", f.scope.site.0);
    let change = json!({"name": "Acme Help", "domains": ["Help.Acme.example", "help.acme.example", "acme.example"],
        "widget_title": "Talk to Acme", "widget_greeting": "Hello there", "accent_color": "#ff0066",
        "privacy_text": "We keep it safe.", "privacy_url": "https://acme.example/privacy"});
    let (status, body) = app.authed(Method::PATCH, &path, &admin, Some(change)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, config) = app.get(&format!("/api/v1/widget/config/{}", f.token)).await;
    assert_eq!(config["site"]["name"], "Acme Help");
    assert_eq!(config["site"]["domains"], json!(["help.acme.example", "acme.example"]), "lower case, once each");
    assert_eq!(config["site"]["widget"]["accent_color"], "#ff0066");
    assert_eq!(config["site"]["widget"]["privacy_url"], "https://acme.example/privacy");
    for (bad, field) in [
        (json!({"name": ""}), "name"),
        (json!({"domains": ["not a domain!"]}), "domains"),
        (json!({"accent_color": "red"}), "accent_color"),
        (json!({"privacy_url": "javascript:alert(1)"}), "privacy_url"),
        (json!({}), "locale"),
    ] {
        let (status, body) = app.authed(Method::PATCH, &path, &admin, Some(bad)).await;
        assert_fields(status, &body, &[field]);
    }
    let (status, body) =
        app.authed(Method::PATCH, &format!("/api/v1/admin/sites/{}", globex.scope.site.0), &admin, Some(json!({"name": "Mine"}))).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    let (_, config) = app.get(&format!("/api/v1/widget/config/{}", f.token)).await;
    assert_eq!(config["site"]["name"], "Acme Help", "nothing refused changed anything");
    assert_eq!(config["site"]["widget"]["privacy_url"], "https://acme.example/privacy");

    // An empty address removes the link; leaving the field out keeps it.
    let (status, body) = app.authed(Method::PATCH, &path, &admin, Some(json!({"privacy_url": ""}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, config) = app.get(&format!("/api/v1/widget/config/{}", f.token)).await;
    assert_eq!(config["site"]["widget"]["privacy_url"], Value::Null, "removed");
    assert_eq!(config["site"]["widget"]["privacy_text"], "We keep it safe.", "the rest kept");
    for bad in [json!(" "), json!("http://"), json!(null), json!(5)] {
        let (status, body) = app.authed(Method::PATCH, &path, &admin, Some(json!({"privacy_url": bad}))).await;
        if bad.is_null() {
            assert_fields(status, &body, &["locale"]);
        } else {
            assert_fields(status, &body, &["privacy_url"]);
        }
    }
}

#[tokio::test]
async fn admins_set_a_sites_widget_and_hours_in_the_web_app_and_the_widget_shows_them() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &["acme.example"]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let mut admin = Browser::signed_in(&app, "admin@acme.example.com").await;
    let page = admin.get("/app/settings/sites").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("acme site") && page.html.contains("anonymous visitors may chat"), "{}", page.html);
    let csrf = page.field("csrf");
    let site = f.scope.site.0;
    let saved = admin
        .post(
            &format!("/app/settings/sites/{site}"),
            &[
                ("csrf", &csrf),
                ("name", "Acme Help"),
                ("domains", ""),
                ("domains", "acme.example\nhelp.acme.example"),
                ("widget_title", "Talk to us"),
                ("widget_greeting", "Ask away"),
                ("accent_color", "#112233"),
                ("privacy_text", "Kept safe."),
                ("privacy_url", ""),
                ("locale", "fr"),
            ],
        )
        .await;
    assert_eq!(saved.location.as_deref(), Some(format!("/app/settings/sites?done=saved#site-{site}").as_str()), "{}", saved.html);
    let (_, config) = app.get(&format!("/api/v1/widget/config/{}", f.token)).await;
    assert_eq!(config["site"]["name"], "Acme Help");
    assert_eq!(config["site"]["domains"], json!(["acme.example", "help.acme.example"]));
    assert_eq!(config["site"]["widget"]["accent_color"], "#112233");
    assert_eq!(config["site"]["widget"]["privacy_url"], Value::Null, "emptied");
    assert_eq!(config["locale"], "fr");

    let hours = admin
        .post(
            &format!("/app/settings/sites/{site}/hours"),
            &[
                ("csrf", &csrf),
                ("time_zone", "Europe/Berlin"),
                ("monday_open", "09:00"),
                ("monday_close", "17:00"),
                ("closed_dates", "2026-12-25"),
            ],
        )
        .await;
    assert_eq!(hours.location.as_deref(), Some(format!("/app/settings/sites?done=hours#site-{site}").as_str()), "{}", hours.html);
    let (_, config) = app.get(&format!("/api/v1/widget/config/{}", f.token)).await;
    assert!(config["online"].is_boolean() && config.get("next_open_at").is_some(), "{config}");
    let page = admin.get("/app/settings/sites").await;
    assert!(page.html.contains("value=\"09:00\"") && page.html.contains("Europe/Berlin"));
    let bad = admin
        .post(&format!("/app/settings/sites/{site}/hours"), &[("csrf", &csrf), ("time_zone", "Mars/Olympus"), ("monday_open", "25:00")])
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(bad.html.contains("Business hours"), "{}", bad.html);
    let always =
        admin.post(&format!("/app/settings/sites/{site}/hours"), &[("csrf", &csrf), ("always_open", "true"), ("time_zone", "UTC")]).await;
    assert!(always.location.is_some());
    let (_, config) = app.get(&format!("/api/v1/widget/config/{}", f.token)).await;
    assert_eq!(config["online"], true);

    let texts = [("widget_title", "T"), ("widget_greeting", "G"), ("privacy_text", "P")];
    let with_texts = |extra: &[(&'static str, &'static str)]| -> Vec<(&'static str, String)> {
        texts.iter().chain(extra).map(|(k, v)| (*k, v.to_string())).collect()
    };
    let fields = |csrf: &str, extra: &[(&'static str, &'static str)]| {
        let mut all = vec![("csrf", csrf.to_owned())];
        all.extend(with_texts(extra));
        all
    };
    let form = fields(&csrf, &[("name", "X"), ("accent_color", "red")]);
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let refused = admin.post(&format!("/app/settings/sites/{site}"), &pairs).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.html.contains("Colour"), "{}", refused.html);
    let mut agent = Browser::signed_in(&app, "agent@acme.example.com").await;
    assert_eq!(agent.get("/app/settings/sites").await.status, StatusCode::FORBIDDEN);
    let forged = admin.post(&format!("/app/settings/sites/{site}"), &[("name", "Forged")]).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let other = app.fixture("globex", &[]).await;
    let form = fields(&csrf, &[("name", "Mine")]);
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let elsewhere = admin.post(&format!("/app/settings/sites/{}", other.scope.site.0), &pairs).await;
    let blank = admin.post(&format!("/app/settings/sites/{site}"), &[("csrf", &csrf), ("name", "X"), ("widget_title", " ")]).await;
    assert_eq!(blank.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(blank.html.contains("Title is required."), "a blank text is refused, not kept");
    assert_eq!(elsewhere.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_hours_form_shows_every_opening_a_site_has_so_a_save_keeps_them() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin_token = app.login("admin@acme.example.com").await;
    let hours = json!({"business_hours": {"time_zone": "UTC", "weekly": [
        {"day": "monday", "open": "08:00", "close": "10:00"}, {"day": "monday", "open": "11:00", "close": "13:00"},
        {"day": "monday", "open": "14:00", "close": "16:00"}]}});
    let (status, _) = app.authed(Method::PATCH, &format!("/api/v1/admin/sites/{}", f.scope.site.0), &admin_token, Some(hours)).await;
    assert_eq!(status, StatusCode::OK);
    let mut admin = Browser::signed_in(&app, "admin@acme.example.com").await;
    let page = admin.get("/app/settings/sites").await;
    assert!(page.html.contains("name=\"monday_open3\" value=\"14:00\""), "a third slot: {}", page.html);
    let csrf = page.field("csrf");
    let site = f.scope.site.0;
    let saved = admin
        .post(
            &format!("/app/settings/sites/{site}/hours"),
            &[
                ("csrf", &csrf),
                ("slots", "3"),
                ("time_zone", "UTC"),
                ("monday_open", "08:00"),
                ("monday_close", "10:00"),
                ("monday_open2", "11:00"),
                ("monday_close2", "13:00"),
                ("monday_open3", "14:00"),
                ("monday_close3", "17:00"),
            ],
        )
        .await;
    assert!(saved.location.is_some(), "{}", saved.html);
    let (_, list) = app.authed(Method::GET, "/api/v1/admin/sites", &admin_token, None).await;
    let weekly = &list["sites"][0]["business_hours"]["weekly"];
    assert_eq!(weekly.as_array().map(Vec::len), Some(3), "{list}");
    assert_eq!(weekly[2]["close"], "17:00");
}

#[tokio::test]
async fn another_tenants_admin_changes_nothing_through_the_settings_pages() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &["acme.example"]).await;
    let agent = app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    app.fixture("globex", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (_, made) =
        app.authed(Method::POST, "/api/v1/admin/canned-responses", &admin, Some(json!({"shortcut": "hi", "body": "Hello"}))).await;
    let canned = made["canned_response"]["id"].as_i64().unwrap();
    let site = f.scope.site.0;

    let mut globex = Browser::signed_in(&app, "admin@globex.example.com").await;
    let csrf = globex.get("/app/settings/operators").await.field("csrf");
    let forms: Vec<(String, Vec<(&str, &str)>)> = vec![
        (format!("/app/settings/operators/{agent}"), vec![("name", "Mine"), ("role", "admin"), ("active", "false")]),
        (format!("/app/settings/operators/{agent}/password-link"), vec![]),
        (format!("/app/settings/sites/{site}/hours"), vec![("time_zone", "UTC"), ("monday_open", "09:00"), ("monday_close", "10:00")]),
        (
            format!("/app/settings/sites/{site}"),
            vec![("name", "Mine"), ("widget_title", "T"), ("widget_greeting", "G"), ("privacy_text", "P")],
        ),
        (format!("/app/settings/canned/{canned}"), vec![("shortcut", "mine"), ("body", "Mine")]),
        (format!("/app/settings/canned/{canned}/delete"), vec![]),
    ];
    for (to, fields) in &forms {
        let mut form = vec![("csrf", csrf.as_str())];
        form.extend_from_slice(fields);
        let page = globex.post(to, &form).await;
        assert_eq!(page.status, StatusCode::NOT_FOUND, "{to}: {}", page.html);
    }

    let (_, operators) = app.authed(Method::GET, "/api/v1/admin/operators", &admin, None).await;
    let its = operators["operators"].as_array().unwrap().iter().find(|o| o["id"] == agent).unwrap().clone();
    assert_eq!((&its["name"], &its["role"], &its["active"]), (&json!("agent"), &json!("agent"), &json!(true)), "{its}");
    let (_, sites) = app.authed(Method::GET, "/api/v1/admin/sites", &admin, None).await;
    assert_eq!(sites["sites"][0]["name"], "acme site");
    assert_eq!(sites["sites"][0]["business_hours"], Value::Null, "{sites}");
    let (_, list) = app.authed(Method::GET, "/api/v1/mobile/canned-responses", &admin, None).await;
    assert_eq!((&list["canned_responses"][0]["shortcut"], &list["canned_responses"][0]["body"]), (&json!("hi"), &json!("Hello")));
    app.stop().await;
}

#[tokio::test]
async fn hostile_names_are_shown_as_text_on_the_settings_pages() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let agent = app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let hostile = "</title><script>alert(1)</script>\"><img src=x onerror=alert(2)>";
    let (status, body) =
        app.authed(Method::PATCH, &format!("/api/v1/admin/operators/{agent}"), &admin, Some(json!({"name": hostile}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let site = json!({"name": hostile, "widget_title": hostile, "widget_greeting": hostile, "privacy_text": hostile});
    let (status, body) = app.authed(Method::PATCH, &format!("/api/v1/admin/sites/{}", f.scope.site.0), &admin, Some(site)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) =
        app.authed(Method::POST, "/api/v1/admin/canned-responses", &admin, Some(json!({"shortcut": "x", "body": hostile}))).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    let mut browser = Browser::signed_in(&app, "admin@acme.example.com").await;
    for path in ["/app/settings/operators", "/app/settings/sites", "/app/settings/canned", "/app/settings/audit", "/app/account"] {
        let page = browser.get(path).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        assert!(!page.html.contains("<script>alert") && !page.html.contains("<img src=x"), "{path}: {}", page.html);
    }
    let page = browser.get("/app/settings/operators").await;
    assert!(page.html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the name is shown: {}", page.html);
    app.stop().await;
}
