//! The bench's own tenant, set up through the admin API like a partner
//! would: a site, an installation, operators, and the conversations the
//! scenarios use.

use std::net::SocketAddr;

use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::client::{Call, Conn, once};

pub const ADMIN_PASSWORD: &str = "the benchmark admin password";
const OPERATOR_PASSWORD: &str = "a benchmark operator password";

/// One open conversation: its public id and its newest message id.
#[derive(Clone, Debug)]
pub struct Conversation {
    pub public_id: String,
    pub last_id: i64,
}

/// Everything the scenarios need.
pub struct Tenant {
    pub site_id: i64,
    pub widget_token: String,
    pub admin_token: String,
    pub operator_tokens: Vec<String>,
}

fn expect(status: u16, body: &Value, what: &str) -> Result<(), String> {
    if (200..300).contains(&status) { Ok(()) } else { Err(format!("{what} failed with {status}: {body}")) }
}

pub async fn login(addr: SocketAddr, email: &str, password: &str) -> Result<String, String> {
    let (status, body) =
        once(addr, Call::post("/api/v1/mobile/login", &json!({"email": email, "password": password}))).await.map_err(|e| e.to_string())?;
    expect(status, &body, "login")?;
    body["token"].as_str().map(str::to_owned).ok_or_else(|| "no token".into())
}

/// A site, an installation and `operators` agents on it, under the admin
/// whose token is given.
pub async fn tenant(addr: SocketAddr, admin_token: String, operators: usize, label: &str) -> Result<Tenant, String> {
    let site = json!({"name": format!("Bench {label}"), "domains": []});
    let (status, body) = once(addr, Call::post("/api/v1/admin/sites", &site).bearer(&admin_token)).await.map_err(|e| e.to_string())?;
    expect(status, &body, "creating the site")?;
    let site_id = body["site"]["id"].as_i64().ok_or("no site id")?;
    let (status, body) = once(addr, Call::post(format!("/api/v1/admin/sites/{site_id}/installations"), &json!({})).bearer(&admin_token))
        .await
        .map_err(|e| e.to_string())?;
    expect(status, &body, "creating the installation")?;
    let widget_token = body["installation"]["token"].as_str().ok_or("no installation token")?.to_owned();
    let mut operator_tokens = Vec::new();
    for n in 0..operators {
        let email = format!("agent{n}.{label}@bench.example");
        let op =
            json!({"email": email, "name": format!("Agent {n}"), "password": OPERATOR_PASSWORD, "role": "agent", "site_ids": [site_id]});
        let (status, body) =
            once(addr, Call::post("/api/v1/admin/operators", &op).bearer(&admin_token)).await.map_err(|e| e.to_string())?;
        expect(status, &body, "creating an operator")?;
        operator_tokens.push(login(addr, &email, OPERATOR_PASSWORD).await?);
    }
    Ok(Tenant { site_id, widget_token, admin_token, operator_tokens })
}

/// `count` more agents on the tenant's site, made a few at a time, then
/// signed in one after another (Parley checks one password at a time per
/// client address): each one's id and bearer token, in order.
pub async fn operators(addr: SocketAddr, tenant: &Tenant, count: usize, label: &str) -> Result<Vec<(i64, String)>, String> {
    const AT_ONCE: usize = 8;
    let mut tasks = JoinSet::new();
    for w in 0..AT_ONCE {
        let (admin, site, label) = (tenant.admin_token.clone(), tenant.site_id, label.to_owned());
        tasks.spawn(async move {
            let mut made = Vec::new();
            for n in (w..count).step_by(AT_ONCE) {
                let email = format!("{label}{n}@bench.example");
                let op = json!({"email": email, "name": format!("Agent {label} {n}"), "password": OPERATOR_PASSWORD, "role": "agent", "site_ids": [site]});
                let (status, body) = once(addr, Call::post("/api/v1/admin/operators", &op).bearer(&admin)).await.map_err(|e| e.to_string())?;
                expect(status, &body, "creating an operator")?;
                made.push((n, body["operator"]["id"].as_i64().ok_or("no operator id")?, email));
            }
            Ok::<_, String>(made)
        });
    }
    let mut all = Vec::with_capacity(count);
    while let Some(part) = tasks.join_next().await {
        all.extend(part.map_err(|e| e.to_string())??);
    }
    all.sort_by_key(|(n, _, _)| *n);
    let mut signed_in = Vec::with_capacity(count);
    for (_, id, email) in all {
        signed_in.push((id, login(addr, &email, OPERATOR_PASSWORD).await?));
    }
    Ok(signed_in)
}

/// Opens `count` conversations with `messages` messages each (the first
/// included), over a few connections at once.
pub async fn conversations(addr: SocketAddr, token: &str, count: usize, messages: usize, label: &str) -> Result<Vec<Conversation>, String> {
    const WORKERS: usize = 16;
    let mut tasks = JoinSet::new();
    for w in 0..WORKERS {
        let (token, label) = (token.to_owned(), label.to_owned());
        tasks.spawn(async move {
            let mut conn = Conn::open(addr).await.map_err(|e| e.to_string())?;
            let mut made = Vec::new();
            for i in (w..count).step_by(WORKERS) {
                let open =
                    json!({"token": token, "visitor_uuid": format!("{label}-visitor-{i}"), "message": "hello", "privacy_accepted": true});
                let answer = conn.send(&Call::post("/api/v1/widget/conversations", &open)).await.map_err(|e| e.to_string())?;
                let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
                expect(answer.status, &body, "opening a conversation")?;
                let public_id = body["conversation"]["public_id"].as_str().ok_or("no public id")?.to_owned();
                let mut last_id = body["messages"][0]["id"].as_i64().unwrap_or(0);
                for m in 1..messages {
                    let path = format!("/api/v1/widget/conversations/{public_id}/messages");
                    let post = json!({"token": token, "body": format!("message {m} of a conversation the benchmark fills")});
                    let answer = conn.send(&Call::post(path, &post)).await.map_err(|e| e.to_string())?;
                    let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
                    expect(answer.status, &body, "posting a message")?;
                    last_id = body["message"]["id"].as_i64().unwrap_or(last_id);
                }
                made.push((i, Conversation { public_id, last_id }));
            }
            Ok::<_, String>(made)
        });
    }
    let mut all = Vec::with_capacity(count);
    while let Some(part) = tasks.join_next().await {
        all.extend(part.map_err(|e| e.to_string())??);
    }
    all.sort_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, c)| c).collect())
}
