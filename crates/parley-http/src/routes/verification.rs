//! Visitor verification: start, confirm, and the magic link's page.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse};
use parley_domain::DomainError;
use parley_domain::verification::service::{ConfirmInput, StartInput};
use utoipa_axum::routes;

use super::Mount;
use super::openapi::VerificationErrors;
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{ClientCaller, JsonBody, PathId, QueryFields, RawBody};
use crate::html::escape;
use crate::requests::verification::*;
use crate::views::verification::*;

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(start)).routes(routes!(confirm))
}

/// The page a magic link opens; served at the root, outside `/api`.
pub fn page_routes(api: Mount) -> Mount {
    api.routes(routes!(link, link_confirm))
}

/// Sends a code (or a magic link) to the visitor's email or phone.
#[utoipa::path(post, path = "/widget/conversations/{public_id}/verification/start", operation_id = "verification_start", tag = "verification",
    params(("public_id" = String, Path, description = "Conversation public id")), request_body = VerificationStartRequest,
    responses((status = 202, description = "Challenge started", body = VerificationStartResponse), VerificationErrors))]
async fn start(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    axum::extract::Path(public_id): axum::extract::Path<String>,
    JsonBody(input): JsonBody<VerificationStartRequest>,
) -> Result<(StatusCode, Json<VerificationStartResponse>), ApiError> {
    let started =
        s.verification.start(&caller, StartInput { token: input.token, public_id, method: input.method, target: input.target }).await?;
    Ok((StatusCode::ACCEPTED, Json((&started).into())))
}

/// Confirms the code; the visitor and the conversation become verified.
#[utoipa::path(post, path = "/widget/conversations/{public_id}/verification/confirm", operation_id = "verification_confirm", tag = "verification",
    params(("public_id" = String, Path, description = "Conversation public id")), request_body = VerificationConfirmRequest,
    responses((status = 200, description = "Verification completed", body = VerificationConfirmResponse), VerificationErrors))]
async fn confirm(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    axum::extract::Path(public_id): axum::extract::Path<String>,
    JsonBody(input): JsonBody<VerificationConfirmRequest>,
) -> Result<Json<VerificationConfirmResponse>, ApiError> {
    let input = ConfirmInput { token: input.token.0, public_id, challenge_id: input.challenge_id, code: input.code.0 };
    let verified = s.verification.confirm(&caller, input).await?;
    Ok(Json((&verified).into()))
}

fn page(status: StatusCode, title: &str, body: &str) -> (StatusCode, Html<String>) {
    (status, Html(crate::html::simple_page(title, body)))
}

/// The magic link opens this page. It changes nothing: mail scanners fetch
/// links before people do, so the confirmation is the button's POST.
#[utoipa::path(get, path = "/verify/{id}", operation_id = "verification_link", tag = "verification",
    params(("id" = i64, Path, description = "Challenge id"), LinkCode),
    responses(
        (status = 200, description = "A page with a button that confirms", content_type = "text/html"),
        (status = 404, description = "Not a valid link", content_type = "text/html")))]
async fn link(id: Result<PathId, ApiError>, code: Result<QueryFields<LinkCode>, ApiError>) -> (StatusCode, Html<String>) {
    let (Ok(PathId(id)), Ok(QueryFields(q))) = (id, code) else {
        return page(
            StatusCode::NOT_FOUND,
            "This link is not valid",
            "<p>Check that you opened the whole link, or ask for a new one in the chat.</p>",
        );
    };
    let form = format!(
        "<p>Confirm that this email address is yours to finish the verification in your chat.</p>\
         <form method=\"post\" action=\"/verify/{id}\"><input type=\"hidden\" name=\"code\" value=\"{code}\">\
         <button type=\"submit\">Confirm my email address</button></form>",
        code = escape(&q.code.0)
    );
    page(StatusCode::OK, "Confirm your email address", &form)
}

/// The button of the link's page: confirms the challenge and tells the
/// visitor to return to the chat.
#[utoipa::path(post, path = "/verify/{id}", operation_id = "verification_link_confirm", tag = "verification",
    params(("id" = i64, Path, description = "Challenge id")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`code=…`"),
    responses(
        (status = 200, description = "Verified", content_type = "text/html"),
        (status = 404, description = "Not a valid link", content_type = "text/html"),
        (status = 408, description = "The form did not arrive in time", content_type = "text/html"),
        (status = 410, description = "Expired or already used", content_type = "text/html"),
        (status = 413, description = "The form is over 64 KiB", content_type = "text/html")))]
async fn link_confirm(
    State(s): State<AppState>,
    id: Result<PathId, ApiError>,
    body: Result<RawBody, ApiError>,
) -> (StatusCode, Html<String>) {
    let body = match body {
        Ok(RawBody(bytes)) => bytes,
        Err(e) => {
            let status = e.into_response().status();
            return page(status, "The form did not arrive", "<p>Please go back and press the button again.</p>");
        }
    };
    let code = url::form_urlencoded::parse(&body).find(|(k, _)| k == "code").map(|(_, v)| v.into_owned());
    let result = match (id, code) {
        (Ok(PathId(id)), Some(code)) => s.verification.confirm_link(parley_domain::model::ChallengeId(id), code).await,
        _ => Err(DomainError::NotFound),
    };
    match result {
        Ok(_) => page(
            StatusCode::OK,
            "You are verified",
            "<p>Your email address is confirmed. You can close this page and return to the chat.</p>",
        ),
        Err(DomainError::ChallengeExpired) => {
            page(StatusCode::GONE, "This link has expired", "<p>It was already used or is too old. Ask for a new one in the chat.</p>")
        }
        Err(DomainError::InvalidCode | DomainError::NotFound) => page(
            StatusCode::NOT_FOUND,
            "This link is not valid",
            "<p>Check that you opened the whole link, or ask for a new one in the chat.</p>",
        ),
        Err(e) => {
            tracing::error!(error = %e, "magic link confirmation failed");
            page(StatusCode::SERVICE_UNAVAILABLE, "Something went wrong", "<p>Please try the link again in a moment.</p>")
        }
    }
}
