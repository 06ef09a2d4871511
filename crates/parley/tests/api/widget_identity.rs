//! Signed visitor identity: the admin API makes and rotates an
//! installation's identity secret, the widget identifies the site's users
//! with a `user_hash` or an HS256 token, and an identified user is one
//! visitor on every device. The signatures here are made by hand (HMAC and
//! base64), not by the `jsonwebtoken` crate the server checks them with,
//! so that the two cannot share a mistake.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{KeyInit, Mac};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

fn sign(secret: &str, data: &[u8]) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

pub fn user_hash(secret: &str, user_id: &str) -> String {
    sign(secret, user_id.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// An HS256 token as RFC 7519 spells it.
fn jwt(secret: &str, header: Value, claims: Value) -> String {
    let head = URL_SAFE_NO_PAD.encode(header.to_string());
    let body = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signature = URL_SAFE_NO_PAD.encode(sign(secret, format!("{head}.{body}").as_bytes()));
    format!("{head}.{body}.{signature}")
}

fn hs256(secret: &str, claims: Value) -> String {
    jwt(secret, json!({"alg": "HS256", "typ": "JWT"}), claims)
}

/// An hour after the test server's clock.
fn in_an_hour(app: &TestApp) -> i64 {
    use parley_domain::Clock;
    app.clock.now().unix_seconds() + 3600
}

/// The fixture's installation id, as its admin reads it.
async fn installation_id(app: &TestApp, f: &Fixture, admin: &str) -> i64 {
    let (status, body) = app.authed(Method::GET, &format!("/api/v1/admin/sites/{}/installations", f.scope.site.0), admin, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["installations"][0]["id"].as_i64().unwrap()
}

/// A new identity secret for the fixture's installation.
async fn rotate(app: &TestApp, admin: &str, id: i64) -> (String, Value) {
    let (status, body) = app.authed(Method::POST, &format!("/api/v1/admin/installations/{id}/identity-secret"), admin, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let secret = body["identity_secret"].as_str().unwrap().to_owned();
    (secret, body["installation"].clone())
}

async fn identify(app: &TestApp, token: &str, uuid: &str, extra: Value) -> (StatusCode, Value) {
    let mut body = json!({"token": token, "uuid": uuid});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    app.post("/api/v1/widget/visitors", body).await
}

/// Opens a conversation for a visitor with the page's signature `claim`
/// (`{}` for none): its public id.
async fn open_signed(app: &TestApp, token: &str, uuid: &str, claim: Value) -> String {
    let (status, body) = try_open(app, token, uuid, claim).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["conversation"]["public_id"].as_str().unwrap().to_owned()
}

async fn try_open(app: &TestApp, token: &str, uuid: &str, claim: Value) -> (StatusCode, Value) {
    let mut body = json!({"token": token, "visitor_uuid": uuid, "message": "Hello", "privacy_accepted": true});
    for (k, v) in claim.as_object().unwrap() {
        body[k] = v.clone();
    }
    app.post("/api/v1/widget/conversations", body).await
}

async fn visitor_of(app: &TestApp, admin: &str, public_id: &str) -> Value {
    let (_, list) = app.authed(Method::GET, "/api/v1/mobile/conversations?per_page=100", admin, None).await;
    let found = list["conversations"].as_array().unwrap().iter().find(|c| c["public_id"] == public_id).cloned();
    found.unwrap_or_else(|| panic!("{public_id} in {list}"))["visitor"].clone()
}

#[tokio::test]
async fn the_secret_is_shown_once_and_a_user_is_one_visitor_on_every_device() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let id = installation_id(&app, &f, &admin).await;
    let (secret, installation) = rotate(&app, &admin, id).await;
    assert!(secret.starts_with("idsec_") && secret.len() > 40, "{secret}");
    assert_eq!(installation["identity_secret_set"], true);
    let (_, listed) = app.authed(Method::GET, &format!("/api/v1/admin/sites/{}/installations", f.scope.site.0), &admin, None).await;
    assert!(!listed.to_string().contains(&secret), "the secret is never shown again");

    // The first device: an anonymous visitor who chats, then signs in.
    let (status, _) = identify(&app, &f.token, "laptop", json!({})).await;
    assert_eq!(status, StatusCode::CREATED);
    let public_id = app.open_conversation("/api/v1", &f.token, "laptop", "Where is my order?").await;
    let hash = user_hash(&secret, "user-42");
    let (status, body) = identify(&app, &f.token, "laptop", json!({"user_id": "user-42", "user_hash": hash, "name": "Ada"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["visitor"]["identified"], true);
    assert_eq!(body["visitor"]["uuid"], "laptop", "this browser's visitor became the user's");
    assert_eq!(body["conversation"]["public_id"], public_id.as_str());

    // The second device gets the same visitor and its conversation.
    let (status, body) = identify(&app, &f.token, "phone", json!({"user_id": "user-42", "user_hash": hash})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["visitor"]["uuid"], "laptop");
    assert_eq!(body["conversation"]["public_id"], public_id.as_str());
    let (status, _) = app.post_message("/api/v1", &f.token, &public_id, "From my phone").await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, messages) = app.get(&format!("/api/v1/widget/conversations/{public_id}/messages?token={}", f.token)).await;
    assert_eq!(status, StatusCode::OK);
    let bodies: Vec<&str> = messages["messages"].as_array().unwrap().iter().map(|m| m["body"].as_str().unwrap()).collect();
    assert_eq!(bodies, ["Where is my order?", "From my phone"], "one history on both devices");

    // Operators see who it is.
    let visitor = visitor_of(&app, &admin, &public_id).await;
    assert_eq!((visitor["identified"].as_bool(), visitor["user_id"].as_str()), (Some(true), Some("user-42")));
    assert_eq!(visitor["name"], "Ada");

    // Another user on the same browser without a logout gets a visitor of
    // its own, not the first user's history.
    let other = user_hash(&secret, "user-43");
    let (status, body) = identify(&app, &f.token, "laptop", json!({"user_id": "user-43", "user_hash": other})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_ne!(body["visitor"]["uuid"], "laptop");
    assert_eq!(body["conversation"], Value::Null);
}

#[tokio::test]
async fn a_token_names_the_user_and_vouches_for_its_email() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let id = installation_id(&app, &f, &admin).await;
    let (secret, _) = rotate(&app, &admin, id).await;
    let token = hs256(&secret, json!({"sub": "user-7", "exp": in_an_hour(&app), "email": "ada@example.com", "name": "Ada L."}));
    let (status, body) = identify(&app, &f.token, "browser-7", json!({"jwt": token, "email": "typed@example.com"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["visitor"]["identified"], true);
    let public_id = open_signed(&app, &f.token, "browser-7", json!({"jwt": token})).await;
    let visitor = visitor_of(&app, &admin, &public_id).await;
    assert_eq!(visitor["user_id"], "user-7");
    assert_eq!(visitor["email"], "ada@example.com", "the signed email wins over a typed one");
    assert_eq!(visitor["email_proven_by"], "site");
    assert_eq!(visitor["email_verified"], false, "Parley's own verification did not prove it");
    assert_eq!(visitor["name"], "Ada L.");

    // With a user_hash the email is the page's word only.
    let (status, _) = identify(
        &app,
        &f.token,
        "browser-8",
        json!({"user_id": "user-8", "user_hash": user_hash(&secret, "user-8"), "email": "b@example.com"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let public_id = open_signed(&app, &f.token, "browser-8", json!({"user_id": "user-8", "user_hash": user_hash(&secret, "user-8")})).await;
    assert_eq!(visitor_of(&app, &admin, &public_id).await["email_proven_by"], Value::Null);
}

#[tokio::test]
async fn a_bad_signature_is_refused_and_merges_nothing() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let id = installation_id(&app, &f, &admin).await;

    // No secret yet: nothing can be identified.
    let (status, body) = identify(&app, &f.token, "b", json!({"user_id": "u", "user_hash": user_hash("idsec_guess", "u")})).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "identity_invalid");

    let (secret, _) = rotate(&app, &admin, id).await;
    let (status, _) =
        identify(&app, &f.token, "victim-device", json!({"user_id": "victim", "user_hash": user_hash(&secret, "victim")})).await;
    assert_eq!(status, StatusCode::CREATED);
    let victim_claim = json!({"user_id": "victim", "user_hash": user_hash(&secret, "victim")});
    let victim = open_signed(&app, &f.token, "victim-device", victim_claim.clone()).await;

    // The identified visitor's uuid alone proves nothing: an unsigned
    // synchronisation with it is someone new, with no conversation, and
    // opening a conversation with it needs the user's signature.
    let (status, body) = identify(&app, &f.token, "victim-device", json!({"email": "mallory@example.com"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_ne!(body["visitor"]["uuid"], "victim-device", "a new visitor");
    assert_eq!((body["visitor"]["identified"].as_bool(), &body["conversation"]), (Some(false), &Value::Null));
    let (status, body) = try_open(&app, &f.token, "victim-device", json!({})).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "identity_required");
    let other = json!({"user_id": "mallory", "user_hash": user_hash(&secret, "mallory")});
    let (status, body) = try_open(&app, &f.token, "victim-device", other).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "identity_invalid");
    assert_ne!(visitor_of(&app, &admin, &victim).await["email"], "mallory@example.com", "the victim's email is untouched");

    let exp = in_an_hour(&app);
    let far = exp + 2 * 86_400;
    let refused = [
        json!({"user_id": "victim", "user_hash": user_hash("idsec_guess", "victim")}),
        json!({"user_id": "victim", "user_hash": user_hash(&secret, "someone-else")}),
        json!({"user_id": "victim", "user_hash": "not-hex"}),
        json!({"jwt": hs256("idsec_guess", json!({"sub": "victim", "exp": exp}))}),
        json!({"jwt": hs256(&secret, json!({"sub": "victim"}))}),
        json!({"jwt": hs256(&secret, json!({"sub": "victim", "exp": exp - 7200}))}),
        json!({"jwt": hs256(&secret, json!({"sub": "victim", "exp": far}))}),
        json!({"jwt": jwt(&secret, json!({"alg": "none"}), json!({"sub": "victim", "exp": exp}))}),
        json!({"jwt": jwt(&secret, json!({"alg": "HS512"}), json!({"sub": "victim", "exp": exp}))}),
        json!({"jwt": "a.b.c"}),
        json!({"jwt": hs256(&secret, json!({"sub": "victim", "exp": exp})), "user_id": "another"}),
    ];
    for claim in refused {
        let (status, body) = identify(&app, &f.token, "attacker", json!(claim)).await;
        assert_error(status, &body, StatusCode::UNAUTHORIZED, "identity_invalid");
        assert!(!body.to_string().contains(&victim), "{body}");
    }
    // Nothing was merged or created: the attacker's browser has no visitor.
    let (status, body) = identify(&app, &f.token, "attacker", json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "the refused attempts created nothing: {body}");
    assert_eq!(body["conversation"], Value::Null);

    // Malformed fields are validation errors, each named.
    let (status, body) =
        identify(&app, &f.token, "x", json!({"user_id": "", "user_hash": 5, "jwt": "with space", "attributes": [1]})).await;
    assert_fields(status, &body, &["attributes", "jwt", "user_hash", "user_id"]);
    let (status, body) = identify(&app, &f.token, "x", json!({"user_hash": user_hash(&secret, "u")})).await;
    assert_fields(status, &body, &["user_hash"]);
}

#[tokio::test]
async fn a_rotated_secret_keeps_checking_for_a_day_and_requiring_identity_refuses_the_anonymous() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let id = installation_id(&app, &f, &admin).await;

    // Requiring identity without a secret is refused.
    let path = format!("/api/v1/admin/installations/{id}");
    let (status, body) = app.authed(Method::PATCH, &path, &admin, Some(json!({"identity_required": true}))).await;
    assert_fields(status, &body, &["identity_required"]);

    let anonymous = app.open_conversation("/api/v1", &f.token, "anon", "Before the rule").await;
    let (old, _) = rotate(&app, &admin, id).await;
    let (new, installation) = rotate(&app, &admin, id).await;
    assert_ne!(old, new);
    assert!(installation["previous_identity_secret_expires_at"].is_string(), "{installation}");
    for secret in [&old, &new] {
        let (status, body) = identify(&app, &f.token, "u1", json!({"user_id": "u1", "user_hash": user_hash(secret, "u1")})).await;
        assert!(status.is_success(), "{body}");
    }

    let (status, body) = app.authed(Method::PATCH, &path, &admin, Some(json!({"identity_required": true}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["installation"]["identity_required"], true);
    let (_, config) = app.get(&format!("/api/v1/widget/config/{}", f.token)).await;
    assert_eq!(config["installation"]["identity_required"], true);

    let (status, body) = identify(&app, &f.token, "anon-2", json!({})).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "identity_required");
    let (status, body) = app
        .post(
            "/api/v1/widget/conversations",
            json!({"token": f.token, "visitor_uuid": "anon-3", "message": "hi", "privacy_accepted": true}),
        )
        .await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "identity_required");
    let (status, body) = app.post_message("/api/v1", &f.token, &anonymous, "After the rule").await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "identity_required");
    let (status, body) = app.post(&format!("/api/v1/widget/conversations/{anonymous}/typing"), json!({"token": f.token})).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "identity_required");
    // An identified visitor chats as before.
    let (status, body) = try_open(&app, &f.token, "u1", json!({"user_id": "u1", "user_hash": user_hash(&new, "u1")})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    // Empty patches are named; agents may not touch any of it.
    let (status, body) = app.authed(Method::PATCH, &path, &admin, Some(json!({}))).await;
    assert_fields(status, &body, &["enabled"]);
}

#[tokio::test]
async fn attributes_are_stored_merged_and_shown_to_operators() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (status, _) = identify(&app, &f.token, "a", json!({"attributes": {"plan": "pro", "seats": 12, "trial": true}})).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = identify(&app, &f.token, "a", json!({"attributes": {"trial": null, "team": "Ops"}})).await;
    assert_eq!(status, StatusCode::OK);
    let public_id = app.open_conversation("/api/v1", &f.token, "a", "hi").await;
    let visitor = visitor_of(&app, &admin, &public_id).await;
    assert_eq!(visitor["attributes"], json!({"plan": "pro", "seats": 12, "team": "Ops"}));
    assert_eq!(visitor["identified"], false);

    let too_many: serde_json::Map<String, Value> = (0..51).map(|i| (format!("k{i}"), json!(i))).collect();
    for bad in [json!({"nested": {"a": 1}}), json!({"": 1}), json!({"long": "x".repeat(1001)}), Value::Object(too_many), json!("text")] {
        let (status, body) = identify(&app, &f.token, "a", json!({"attributes": bad})).await;
        assert_fields(status, &body, &["attributes"]);
    }
    assert_eq!(
        visitor_of(&app, &admin, &public_id).await["attributes"],
        json!({"plan": "pro", "seats": 12, "team": "Ops"}),
        "refused updates change nothing"
    );
}

#[tokio::test]
async fn another_tenant_or_an_agent_cannot_touch_an_installations_identity() {
    let app = TestApp::spawn().await;
    let acme = app.fixture("acme", &[]).await;
    let globex = app.fixture("globex", &[]).await;
    let acme_admin = app.login("admin@acme.example.com").await;
    let globex_admin = app.login("admin@globex.example.com").await;
    let acme_id = installation_id(&app, &acme, &acme_admin).await;
    let (secret, _) = rotate(&app, &acme_admin, acme_id).await;

    for prefix in PREFIXES {
        let (status, body) =
            app.authed(Method::POST, &format!("{prefix}/admin/installations/{acme_id}/identity-secret"), &globex_admin, None).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
        let (status, body) = app
            .authed(
                Method::PATCH,
                &format!("{prefix}/admin/installations/{acme_id}"),
                &globex_admin,
                Some(json!({"identity_required": true})),
            )
            .await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    // Acme's secret signs nothing on Globex's installation.
    let (status, body) = identify(&app, &globex.token, "g", json!({"user_id": "u", "user_hash": user_hash(&secret, "u")})).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "identity_invalid");

    // A second site of the same tenant: its own secret, its own users.
    let second = app.site("acme-2", acme.scope.tenant, &[]).await;
    let (_, listed) =
        app.authed(Method::GET, &format!("/api/v1/admin/sites/{}/installations", second.scope.site.0), &acme_admin, None).await;
    let second_id = listed["installations"][0]["id"].as_i64().unwrap();
    let (second_secret, _) = rotate(&app, &acme_admin, second_id).await;
    let (status, body) = identify(&app, &second.token, "s", json!({"user_id": "u", "user_hash": user_hash(&secret, "u")})).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "identity_invalid");
    let (status, _) = identify(&app, &acme.token, "d1", json!({"user_id": "u", "user_hash": user_hash(&secret, "u")})).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, body) = identify(&app, &second.token, "d2", json!({"user_id": "u", "user_hash": user_hash(&second_secret, "u")})).await;
    assert_eq!(status, StatusCode::CREATED, "the same user id on another site is another visitor: {body}");

    // An agent may not make secrets.
    app.operator(&acme, "agent@acme.example.com", parley_domain::model::Role::Agent, &[acme.scope.site]).await;
    let agent = app.login("agent@acme.example.com").await;
    let (status, body) = app.authed(Method::POST, &format!("/api/v1/admin/installations/{acme_id}/identity-secret"), &agent, None).await;
    assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
}
