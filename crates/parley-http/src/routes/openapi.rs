//! The OpenAPI 3.1 document, generated from the route declarations and
//! served at `GET /openapi.json`.

use std::collections::BTreeMap;

use axum::Router;
use axum::http::header;
use axum::routing::get;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, OpenApi as Doc, Ref, RefOr};
use utoipa::{IntoResponses, OpenApi};

use crate::AppState;
use crate::error::{ErrorBody, ErrorDetail};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Parley API",
        description = "Visitor widget API, operator mobile API, health report and webhooks of Parley, \
            a self-hosted multi-tenant customer chat platform. Every `/api/v1/` route is also served under `/api/`. \
            Errors are always `{\"error\": {\"code\", \"message\", \"fields\"?}}`."
    ),
    components(schemas(ErrorBody, ErrorDetail)),
    tags(
        (name = "health", description = "Platform health"),
        (name = "widget", description = "Visitor widget API, authorised by the public installation token"),
        (name = "verification", description = "Visitor verification by email code, SMS code or magic link"),
        (name = "mobile", description = "Operator mobile API, authorised by a bearer token from `/mobile/login`"),
        (name = "admin", description = "Tenant administration, for operators with the admin role"),
        (name = "sandbox", description = "Demo credentials (only under `parley demo`)"),
    )
)]
struct ApiDoc;

pub fn base() -> Doc {
    ApiDoc::openapi()
}

fn error(description: &str) -> RefOr<Response> {
    ResponseBuilder::new()
        .description(description)
        .content("application/json", Content::new(Some(Ref::from_schema_name("ErrorBody"))))
        .build()
        .into()
}

fn errors(list: &[(&str, &str)]) -> BTreeMap<String, RefOr<Response>> {
    list.iter().map(|(code, description)| (code.to_string(), error(description))).collect()
}

const NOT_FOUND: (&str, &str) = ("404", "`not_found`: unknown token, or a conversation of another site or tenant");
const ORIGIN: (&str, &str) =
    ("403", "`origin_not_allowed`: the browser origin is not among the site's domains; `forbidden`: installation disabled");
const INVALID: (&str, &str) = ("422", "`validation_failed`, with `fields` naming every bad field");
const UNAVAILABLE: (&str, &str) = ("503", "`unavailable`: the database cannot be reached");

const BODY_ERRORS: [(&str, &str); 3] = [
    ("400", "`malformed_json`: the body is not a JSON object"),
    ("413", "`payload_too_large`: the body is over 64 KiB"),
    ("415", "`unsupported_media_type`: the content type is not application/json"),
];
const UNAUTHENTICATED: (&str, &str) = ("401", "`unauthenticated`: missing, malformed, expired or revoked bearer token");

/// Errors of the login route.
pub struct LoginErrors;

impl IntoResponses for LoginErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([
            ("401", "`invalid_credentials`: unknown email or wrong password (the same answer for both)"),
            INVALID,
            ("429", "`rate_limited`: too many failed logins for this email or address; see `Retry-After`"),
            UNAVAILABLE,
        ]);
        errors(&list)
    }
}

/// Errors of the operator routes.
pub struct OperatorErrors;

impl IntoResponses for OperatorErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([
            UNAUTHENTICATED,
            ("404", "`not_found`: no such conversation, or not visible to this operator"),
            ("409", "`conflict`: assign or transfer on a closed conversation"),
            ("422", "`validation_failed`, with `fields`; also an impossible assignee"),
            UNAVAILABLE,
        ]);
        errors(&list)
    }
}

/// Errors of the administration routes.
pub struct AdminErrors;

impl IntoResponses for AdminErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([
            UNAUTHENTICATED,
            ("403", "`forbidden`: the operator is not an admin"),
            ("404", "`not_found`: no such record in this tenant"),
            INVALID,
            UNAVAILABLE,
        ]);
        errors(&list)
    }
}

/// Errors of the verification routes.
pub struct VerificationErrors;

impl IntoResponses for VerificationErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([
            ORIGIN,
            ("404", "`not_found`: unknown token, conversation or challenge"),
            ("410", "`challenge_expired`: expired, used, superseded, or spent by 5 wrong codes"),
            ("422", "`validation_failed` (an unavailable method, no known target) or `invalid_code`"),
            ("429", "`rate_limited`, with `Retry-After`"),
            ("503", "`unavailable`: the message could not be sent; no challenge is usable"),
        ]);
        errors(&list)
    }
}

/// Errors of widget routes that only read.
pub struct ReadErrors;

impl IntoResponses for ReadErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[ORIGIN, NOT_FOUND, INVALID, UNAVAILABLE])
    }
}

/// Errors of widget routes that take a JSON body.
pub struct WriteErrors;

impl IntoResponses for WriteErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[
            ("400", "`malformed_json`: the body is not a JSON object"),
            ORIGIN,
            NOT_FOUND,
            ("413", "`payload_too_large`: the body is over 64 KiB"),
            ("415", "`unsupported_media_type`: the content type is not application/json"),
            INVALID,
            ("429", "`rate_limited`, with a `Retry-After` header"),
            UNAVAILABLE,
        ])
    }
}

/// Gives each copy of a route (root, `/api`, `/api/v1`) its own operation id,
/// as OpenAPI requires them to be unique.
pub fn finish(mut doc: Doc) -> Doc {
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    let bearer = SecurityScheme::Http(
        HttpBuilder::new().scheme(HttpAuthScheme::Bearer).description(Some("Token from `POST /api/v1/mobile/login`")).build(),
    );
    doc.components.get_or_insert_with(Default::default).add_security_scheme("bearer", bearer);
    for (path, item) in doc.paths.paths.iter_mut() {
        let suffix = if path.starts_with("/api/v1/") {
            ""
        } else if path.starts_with("/api/") {
            "_unversioned"
        } else {
            "_root"
        };
        if suffix.is_empty() || path.starts_with("/sandbox") || path.starts_with("/verify") {
            continue;
        }
        for op in [&mut item.get, &mut item.post, &mut item.put, &mut item.patch, &mut item.delete].into_iter().flatten() {
            if let Some(id) = &mut op.operation_id {
                id.push_str(suffix);
            }
        }
    }
    doc
}

pub fn routes(doc: Doc) -> Router<AppState> {
    let json = doc.to_json().unwrap_or_else(|_| "{}".to_owned());
    Router::new().route("/openapi.json", get(move || std::future::ready(([(header::CONTENT_TYPE, "application/json")], json.clone()))))
}
