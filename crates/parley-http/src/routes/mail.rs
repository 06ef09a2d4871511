//! Email in and out of conversations: the inbound route a mail server or
//! provider posts visitors' replies to, and the unsubscribe page every
//! email to a visitor links to.

use axum::Json;
use axum::extract::{DefaultBodyLimit, FromRequest, Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Html;
use parley_domain::DomainError;
use parley_domain::continuity::InboundOutcome;
use serde::Serialize;
use subtle::ConstantTimeEq;
use utoipa::ToSchema;
use utoipa_axum::routes;

use super::openapi::InboundErrors;
use super::{INBOUND_LIMIT, Mount};
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{RawBody, bearer_token};
use crate::html::escape;

pub fn routes(api: Mount) -> Mount {
    let (schemas, paths, method_router) = routes!(inbound_email);
    api.routes((schemas, paths, method_router.layer(DefaultBodyLimit::max(INBOUND_LIMIT))))
}

/// The unsubscribe page; served at the root, outside `/api`.
pub fn page_routes(api: Mount) -> Mount {
    api.routes(routes!(unsubscribe_page, unsubscribe))
}

/// What became of a posted email.
#[derive(Serialize, ToSchema)]
pub struct InboundEmailResponse {
    /// `added` (a visitor message), `repeated` (its `Message-ID` was
    /// taken before; nothing added) or `dropped` (no reply address of
    /// this service among its recipients, or not sent by the
    /// conversation's visitor).
    #[schema(value_type = String, example = "added")]
    pub outcome: &'static str,
    /// The visitor message it is (added or repeated).
    pub message_id: Option<i64>,
}

/// A visitor's emailed reply, as raw RFC 5322 (what a provider's raw
/// forwarding or a mail server's pipe posts), with `Authorization: Bearer
/// $PARLEY_INBOUND_TOKEN`. Its new text, quoted history and signature
/// removed, joins the conversation its reply address names. Answered 202
/// whatever became of it once it is a readable email; see docs/continuity.md.
#[utoipa::path(post, path = "/inbound/email", operation_id = "inbound_email", tag = "email",
    request_body(content = String, content_type = "message/rfc822", description = "The raw email"),
    security(("bearer" = [])),
    responses((status = 202, description = "Taken, repeated or dropped", body = InboundEmailResponse), InboundErrors))]
async fn inbound_email(State(s): State<AppState>, request: Request) -> Result<(StatusCode, Json<InboundEmailResponse>), ApiError> {
    // Checked before the body is read: up to 10 MiB is not read for
    // someone who may not post it.
    let Some(expected) = s.inbound_token.as_deref() else { return Err(ApiError::RouteNotFound) };
    let given = bearer_token(request.headers()).unwrap_or_default();
    if !bool::from(given.as_bytes().ct_eq(expected.as_bytes())) {
        return Err(DomainError::Unauthenticated.into());
    }
    if !is_rfc822(request.headers()) {
        return Err(ApiError::NotMail);
    }
    let RawBody(raw) = RawBody::from_request(request, &s).await.map_err(|e| match e {
        ApiError::PayloadTooLarge => ApiError::MailTooLarge,
        other => other,
    })?;
    // Parsing a large email takes a while: off the threads that serve.
    let mail = tokio::task::spawn_blocking(move || parley_domain::continuity::inbound::read(&raw))
        .await
        .map_err(|_| ApiError::Internal)?
        .ok_or_else(|| DomainError::invalid("message", "is not an email (RFC 5322)"))?;
    let (outcome, message_id) = match s.continuity.receive(mail).await? {
        InboundOutcome::Added(id) => ("added", Some(id.0)),
        InboundOutcome::Repeated(id) => ("repeated", Some(id.0)),
        InboundOutcome::Dropped(why) => {
            tracing::info!(why, "inbound email dropped");
            ("dropped", None)
        }
    };
    Ok((StatusCode::ACCEPTED, Json(InboundEmailResponse { outcome, message_id })))
}

fn is_rfc822(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("message/rfc822"))
}

fn page(status: StatusCode, title: &str, body: &str) -> (StatusCode, Html<String>) {
    (status, Html(crate::html::simple_page(title, body)))
}

/// Every email to a visitor links here. Opening it changes nothing (mail
/// scanners open links): its button does, like a mail client's one-click
/// POST (RFC 8058).
#[utoipa::path(get, path = "/email/unsubscribe/{token}", operation_id = "email_unsubscribe_page", tag = "email",
    params(("token" = String, Path, description = "The email's unsubscribe token")),
    responses(
        (status = 200, description = "A page with a button that unsubscribes", content_type = "text/html"),
        (status = 404, description = "Not a valid link", content_type = "text/html")))]
async fn unsubscribe_page(State(s): State<AppState>, Path(token): Path<String>) -> (StatusCode, Html<String>) {
    if !s.continuity.knows_unsubscribe(&token) {
        return page(StatusCode::NOT_FOUND, "This link is not valid", "<p>Check that you opened the whole link.</p>");
    }
    let form = format!(
        "<p>Stop the emails about this conversation? You can still chat on the site.</p>\
         <form method=\"post\" action=\"/email/unsubscribe/{}\"><input type=\"hidden\" name=\"List-Unsubscribe\" value=\"One-Click\">\
         <button type=\"submit\">Unsubscribe</button></form>",
        escape(&token)
    );
    page(StatusCode::OK, "Unsubscribe", &form)
}

/// What a mail client posts (RFC 8058); any body unsubscribes alike.
#[derive(serde::Deserialize, ToSchema)]
#[allow(dead_code, reason = "documents the form; the route reads no field of it")]
pub struct OneClickForm {
    /// `One-Click`.
    #[serde(rename = "List-Unsubscribe")]
    #[schema(example = "One-Click")]
    list_unsubscribe: Option<String>,
}

/// The one-click unsubscribe (RFC 8058: a mail client posts
/// `List-Unsubscribe=One-Click`), and the page's button: nothing more is
/// emailed about the conversation. Repeating it is harmless.
#[utoipa::path(post, path = "/email/unsubscribe/{token}", operation_id = "email_unsubscribe", tag = "email",
    params(("token" = String, Path, description = "The email's unsubscribe token")),
    request_body(content = OneClickForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "Unsubscribed", content_type = "text/html"),
        (status = 404, description = "Not a valid link", content_type = "text/html"),
        (status = 503, description = "Could not be recorded; try again", content_type = "text/html")))]
async fn unsubscribe(State(s): State<AppState>, Path(token): Path<String>) -> (StatusCode, Html<String>) {
    match s.continuity.unsubscribe(&token).await {
        Ok(()) => page(StatusCode::OK, "You are unsubscribed", "<p>No more emails will come about this conversation.</p>"),
        Err(DomainError::NotFound) => page(StatusCode::NOT_FOUND, "This link is not valid", "<p>Check that you opened the whole link.</p>"),
        Err(e) => {
            tracing::error!(error = %e, "unsubscribe failed");
            page(StatusCode::SERVICE_UNAVAILABLE, "Something went wrong", "<p>Please try again in a moment.</p>")
        }
    }
}
