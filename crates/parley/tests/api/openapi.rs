use std::collections::BTreeSet;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

const WIDGET_ROUTES: [(&str, &str); 7] = [
    ("get", "/widget/config/{token}"),
    ("get", "/widget/installations/{token}/health"),
    ("post", "/widget/ping"),
    ("post", "/widget/visitors"),
    ("post", "/widget/conversations"),
    ("get", "/widget/conversations/{public_id}/messages"),
    ("post", "/widget/conversations/{public_id}/messages"),
];

async fn document(app: &TestApp) -> Value {
    let (status, doc) = app.get("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    doc
}

#[tokio::test]
async fn the_document_covers_every_route_under_both_prefixes() {
    let app = TestApp::spawn().await;
    let doc = document(&app).await;
    assert_eq!(doc["openapi"], "3.1.0");
    for path in ["/health", "/api/health", "/api/v1/health"] {
        assert!(doc["paths"][path]["get"].is_object(), "{path}");
    }
    for prefix in PREFIXES {
        for (method, route) in WIDGET_ROUTES {
            let op = &doc["paths"][format!("{prefix}{route}")][method];
            assert!(op.is_object(), "{method} {prefix}{route} is documented");
            let responses = op["responses"].as_object().unwrap();
            assert!(responses.keys().any(|k| k.starts_with('2')), "{route}: a success response");
            for code in ["404", "422"] {
                assert!(responses.contains_key(code), "{route}: {code}");
            }
            if method == "post" {
                for code in ["400", "413", "415", "429"] {
                    assert!(responses.contains_key(code), "{route}: {code}");
                }
                assert!(op["requestBody"]["content"]["application/json"]["schema"].is_object(), "{route}: request schema");
            }
        }
    }
    let ids: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .filter_map(|op| op["operationId"].as_str())
        .collect();
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(ids.len(), unique.len(), "operation ids are unique: {ids:?}");
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
    assert!(doc["paths"].get("/sandbox").is_none(), "no sandbox under serve");
}

/// The documented required fields are exactly the ones the server insists
/// on: for every operation with a request body, an empty object names each
/// of them.
#[tokio::test]
async fn documented_required_fields_are_enforced() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let doc = document(&app).await;
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        if !path.starts_with("/api/v1/") {
            continue;
        }
        for (method, op) in item.as_object().unwrap() {
            let Some(schema_ref) = op["requestBody"]["content"]["application/json"]["schema"]["$ref"].as_str() else {
                continue;
            };
            let schema = &doc["components"]["schemas"][schema_ref.rsplit('/').next().unwrap()];
            let mut required: Vec<&str> =
                schema["required"].as_array().map(|r| r.iter().map(|v| v.as_str().unwrap()).collect()).unwrap_or_default();
            // A message's text is required unless it names files.
            if schema["properties"].get("attachment_ids").is_some() {
                required.push("body");
            }
            if required.is_empty() {
                continue;
            }
            required.sort_unstable();
            let concrete = path.replace("{public_id}", "conv_x").replace("{id}", "1");
            let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let (status, body) = app.authed(method, &concrete, &admin, Some(json!({}))).await;
            assert_fields(status, &body, &required);
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} operations checked");
}

#[tokio::test]
async fn operator_routes_declare_bearer_security() {
    let app = TestApp::spawn().await;
    let doc = document(&app).await;
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    for (path, item) in doc["paths"].as_object().unwrap() {
        // Signing in and choosing a password through an emailed link are
        // the two operator routes before any token.
        let before_token = path.ends_with("/login") || path.ends_with("/mobile/password");
        let needs_token = (path.contains("/mobile/") && !before_token) || path.contains("/admin/") || path.ends_with("/inbound/email");
        for op in item.as_object().unwrap().values() {
            assert_eq!(op.get("security").is_some(), needs_token, "{path}");
        }
    }
}

/// OpenAPI 3.1 requires a description on every response (strict client
/// generators stop at the first without one), and each stream's schema
/// names every event it sends, `reset` included, each with the schema of
/// its data.
#[tokio::test]
async fn every_response_is_described_and_every_stream_event_has_a_schema() {
    let app = TestApp::spawn().await;
    let doc = document(&app).await;
    let mut responses = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for (status, response) in op["responses"].as_object().unwrap() {
                let described = response["description"].as_str().is_some_and(|d| !d.is_empty());
                assert!(described, "{method} {path} {status}: {response}");
                responses += 1;
            }
        }
    }
    assert!(responses > 300, "{responses}");
    let events = |path: &str, method: &str| -> BTreeSet<String> {
        let content = &doc["paths"][path][method]["responses"]["200"]["content"]["text/event-stream"];
        let name = content["schema"]["$ref"].as_str().unwrap_or_else(|| panic!("{path}: {content}")).rsplit('/').next().unwrap();
        let schema = &doc["components"]["schemas"][name];
        schema["oneOf"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: {schema}"))
            .iter()
            .map(|event| {
                let data = &event["properties"]["data"];
                assert_eq!(data["contentMediaType"], "application/json", "{event}");
                if let Some(target) = data["contentSchema"]["$ref"].as_str() {
                    assert!(doc["components"]["schemas"][target.rsplit('/').next().unwrap()].is_object(), "{target}");
                }
                event["properties"]["event"]["enum"][0].as_str().unwrap().to_owned()
            })
            .collect()
    };
    for prefix in PREFIXES {
        let widget = events(&format!("{prefix}/widget/conversations/{{public_id}}/events"), "get");
        assert_eq!(widget, ["conversation.updated", "message.created", "reset", "typing"].map(String::from).into());
        let operator = events(&format!("{prefix}/mobile/events"), "get");
        assert_eq!(
            operator,
            ["conversation.created", "conversation.updated", "message.created", "reset", "typing"].map(String::from).into()
        );
    }
}
