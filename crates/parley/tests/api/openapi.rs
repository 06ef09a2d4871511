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
            assert!(
                responses.keys().any(|k| k.starts_with('2')),
                "{route}: a success response"
            );
            for code in ["404", "422"] {
                assert!(responses.contains_key(code), "{route}: {code}");
            }
            if method == "post" {
                for code in ["400", "413", "415", "429"] {
                    assert!(responses.contains_key(code), "{route}: {code}");
                }
                assert!(
                    op["requestBody"]["content"]["application/json"]["schema"].is_object(),
                    "{route}: request schema"
                );
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
    assert!(
        doc["paths"].get("/sandbox").is_none(),
        "no sandbox under serve"
    );
}

/// The documented required fields are exactly the ones the server insists
/// on: an empty body names each of them.
#[tokio::test]
async fn documented_required_fields_are_enforced() {
    let app = TestApp::spawn().await;
    let doc = document(&app).await;
    for (method, route) in WIDGET_ROUTES.into_iter().filter(|(m, _)| *m == "post") {
        let path = format!("/api/v1{}", route.replace("{public_id}", "conv_x"));
        let schema_ref = doc["paths"][format!("/api/v1{route}")][method]["requestBody"]["content"]
            ["application/json"]["schema"]["$ref"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_owned();
        let schema = &doc["components"]["schemas"][&schema_ref];
        let mut required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        required.sort_unstable();
        let (status, body) = app.post(&path, json!({})).await;
        assert_fields(status, &body, &required);
    }
}
