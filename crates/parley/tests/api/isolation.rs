//! Nothing of another tenant, or of a site an agent is not a member of, is
//! visible or changeable. Every test here has a second tenant and a second
//! site.

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

struct World {
    app: TestApp,
    /// Acme's admin, an agent of Acme's first site only, Globex's admin.
    acme_admin: String,
    acme_agent: String,
    globex_admin: String,
    /// Conversation ids: Acme site 1, Acme site 2, Globex.
    acme_1: i64,
    acme_2: i64,
    globex: i64,
    globex_site: i64,
    globex_installation: i64,
    globex_agent_id: i64,
}

async fn world() -> World {
    let app = TestApp::spawn().await;
    let acme = app.fixture("acme", &[]).await;
    let acme_2 = app.site("acme", acme.scope.tenant, &[]).await;
    let globex = app.fixture("globex", &[]).await;
    app.operator(&acme, "agent@acme.example", Role::Agent, &[acme.scope.site]).await;
    let globex_agent_id = app.operator(&globex, "agent@globex.example", Role::Agent, &[globex.scope.site]).await;
    app.open_conversation("/api", &acme.token, "a1", "acme site one").await;
    app.open_conversation("/api", &acme_2.token, "a2", "acme site two").await;
    app.open_conversation("/api", &globex.token, "g", "globex secret").await;
    let acme_admin = app.login("admin@acme.example.com").await;
    let globex_admin = app.login("admin@globex.example.com").await;
    let acme_agent = app.login("agent@acme.example").await;
    let id_of = |body: &Value, text: &str| -> i64 {
        body["conversations"].as_array().unwrap().iter().find(|c| c["visitor"]["uuid"] == text).unwrap()["id"].as_i64().unwrap()
    };
    let (_, a) = app.authed(Method::GET, "/api/mobile/conversations", &acme_admin, None).await;
    let (_, g) = app.authed(Method::GET, "/api/mobile/conversations", &globex_admin, None).await;
    let (_, installs) =
        app.authed(Method::GET, &format!("/api/admin/sites/{}/installations", globex.scope.site.0), &globex_admin, None).await;
    World {
        acme_1: id_of(&a, "a1"),
        acme_2: id_of(&a, "a2"),
        globex: id_of(&g, "g"),
        globex_site: globex.scope.site.0,
        globex_installation: installs["installations"][0]["id"].as_i64().unwrap(),
        globex_agent_id,
        app,
        acme_admin,
        acme_agent,
        globex_admin,
    }
}

fn listed(body: &Value) -> Vec<String> {
    let mut v: Vec<String> =
        body["conversations"].as_array().unwrap().iter().map(|c| c["visitor"]["uuid"].as_str().unwrap().to_owned()).collect();
    v.sort();
    v
}

#[tokio::test]
async fn each_operator_lists_exactly_what_it_may_see() {
    let w = world().await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/mobile/conversations");
        let (_, body) = w.app.authed(Method::GET, &path, &w.acme_admin, None).await;
        assert_eq!(listed(&body), ["a1", "a2"], "an admin sees its tenant's sites");
        let (_, body) = w.app.authed(Method::GET, &path, &w.acme_agent, None).await;
        assert_eq!(listed(&body), ["a1"], "an agent sees its own sites");
        assert_eq!(body["meta"]["total"], 1);
        let (_, body) = w.app.authed(Method::GET, &path, &w.globex_admin, None).await;
        assert_eq!(listed(&body), ["g"]);
    }
}

#[tokio::test]
async fn out_of_scope_conversations_are_404_for_every_action() {
    let w = world().await;
    let cases = [(&w.acme_agent, w.acme_2), (&w.acme_agent, w.globex), (&w.acme_admin, w.globex), (&w.globex_admin, w.acme_1)];
    for prefix in PREFIXES {
        for (token, id) in cases {
            let base = format!("{prefix}/mobile/conversations/{id}");
            for (method, path, body) in [
                (Method::GET, base.clone(), None),
                (Method::GET, format!("{base}/messages"), None),
                (Method::POST, format!("{base}/messages"), Some(json!({"body": "intrusion"}))),
                (Method::POST, format!("{base}/assign"), None),
                (Method::POST, format!("{base}/transfer"), Some(json!({"operator_id": 1}))),
                (Method::POST, format!("{base}/close"), None),
            ] {
                let (status, res) = w.app.authed(method.clone(), &path, token, body).await;
                assert_error(status, &res, StatusCode::NOT_FOUND, "not_found");
                assert!(!res.to_string().contains("secret"), "{method} {path}: {res}");
            }
        }
    }
    // Nothing changed: every conversation is still unassigned and open, with one message.
    for (token, id) in [(&w.acme_admin, w.acme_1), (&w.acme_admin, w.acme_2), (&w.globex_admin, w.globex)] {
        let (_, body) = w.app.authed(Method::GET, &format!("/api/mobile/conversations/{id}"), token, None).await;
        assert_eq!(body["conversation"]["status"], "unassigned");
        let (_, body) = w.app.authed(Method::GET, &format!("/api/mobile/conversations/{id}/messages"), token, None).await;
        assert_eq!(body["messages"].as_array().unwrap().len(), 1);
    }
}

#[tokio::test]
async fn another_tenants_operator_cannot_be_assigned() {
    let w = world().await;
    for action in ["assign", "transfer"] {
        let (status, body) = w
            .app
            .authed(
                Method::POST,
                &format!("/api/mobile/conversations/{}/{action}", w.acme_1),
                &w.acme_admin,
                Some(json!({"operator_id": w.globex_agent_id})),
            )
            .await;
        assert_fields(status, &body, &["operator_id"]);
    }
}

#[tokio::test]
async fn admin_routes_never_reach_another_tenant() {
    let w = world().await;
    for prefix in PREFIXES {
        let (_, sites) = w.app.authed(Method::GET, &format!("{prefix}/admin/sites"), &w.acme_admin, None).await;
        assert_eq!(sites["sites"].as_array().unwrap().len(), 2);
        assert!(!sites.to_string().contains("globex"));
        let (_, ops) = w.app.authed(Method::GET, &format!("{prefix}/admin/operators"), &w.acme_admin, None).await;
        assert!(!ops.to_string().contains("globex"));

        let (status, body) =
            w.app.authed(Method::GET, &format!("{prefix}/admin/sites/{}/installations", w.globex_site), &w.acme_admin, None).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
        let (status, body) = w
            .app
            .authed(Method::POST, &format!("{prefix}/admin/sites/{}/installations", w.globex_site), &w.acme_admin, Some(json!({})))
            .await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
        let (status, body) = w
            .app
            .authed(
                Method::PATCH,
                &format!("{prefix}/admin/installations/{}", w.globex_installation),
                &w.acme_admin,
                Some(json!({"enabled": false})),
            )
            .await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
        let (status, body) = w
            .app
            .authed(
                Method::PATCH,
                &format!("{prefix}/admin/operators/{}", w.globex_agent_id),
                &w.acme_admin,
                Some(json!({"active": false})),
            )
            .await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
        let (status, body) = w
            .app
            .authed(
                Method::POST,
                &format!("{prefix}/admin/operators"),
                &w.acme_admin,
                Some(json!({"email": format!("x{}@acme.example", prefix.len()), "name": "X", "password": PASSWORD, "role": "agent", "site_ids": [w.globex_site]})),
            )
            .await;
        assert_fields(status, &body, &["site_ids"]);
    }
    // Globex's installation and agent are untouched.
    let (_, installs) =
        w.app.authed(Method::GET, &format!("/api/admin/sites/{}/installations", w.globex_site), &w.globex_admin, None).await;
    assert_eq!(installs["installations"][0]["enabled"], true);
    w.app.login("agent@globex.example").await;
}

#[tokio::test]
async fn agents_get_403_on_admin_routes() {
    let w = world().await;
    for prefix in PREFIXES {
        for (method, path, body) in [
            (Method::GET, format!("{prefix}/admin/sites"), None),
            (Method::POST, format!("{prefix}/admin/sites"), Some(json!({"name": "Mine"}))),
            (Method::GET, format!("{prefix}/admin/operators"), None),
            (
                Method::POST,
                format!("{prefix}/admin/operators"),
                Some(json!({"email": "e@acme.example", "name": "E", "password": PASSWORD, "role": "admin"})),
            ),
            (Method::GET, format!("{prefix}/admin/sites/1/installations"), None),
            (Method::PATCH, format!("{prefix}/admin/installations/1"), Some(json!({"enabled": false}))),
            (Method::PATCH, format!("{prefix}/admin/operators/1"), Some(json!({"active": false}))),
        ] {
            let (status, res) = w.app.authed(method, &path, &w.acme_agent, body).await;
            assert_error(status, &res, StatusCode::FORBIDDEN, "forbidden");
        }
    }
}
