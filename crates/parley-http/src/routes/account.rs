//! The operator's own account (any operator's bearer token): its name and
//! notification choices, its password, and its sign-ins; and the password
//! an emailed link lets someone not signed in choose.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use parley_domain::model::TokenId;
use utoipa_axum::routes;

use super::Mount;
use super::openapi::{AccountErrors, DeviceListErrors, PasswordChangeErrors, PasswordSetErrors, SignInEndErrors};
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Authenticated, JsonBody, PathId};
use crate::requests::mobile::{AccountPatchRequest, PasswordChangeRequest, PasswordSetRequest};
use crate::views::mobile::{AccountResponse, PasswordSetResponse, SignInListResponse, SignInView};

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(update_account))
        .routes(routes!(change_password))
        .routes(routes!(list_sign_ins))
        .routes(routes!(end_sign_in))
        .routes(routes!(set_password_by_link))
}

/// Sets the password an emailed link lets its holder choose (an
/// invitation, or a new password an admin sent a link for), as the page
/// `/app/password` does. The link works once, for 72 hours; every
/// sign-in of the operator ends. No bearer token: the link is the
/// credential.
#[utoipa::path(post, path = "/mobile/password", operation_id = "mobile_set_password_by_link", tag = "mobile",
    request_body = PasswordSetRequest,
    responses((status = 200, body = PasswordSetResponse), PasswordSetErrors))]
async fn set_password_by_link(
    State(s): State<AppState>,
    JsonBody(input): JsonBody<PasswordSetRequest>,
) -> Result<Json<PasswordSetResponse>, ApiError> {
    let operator = s.invitations.set_password(&input.token.0, input.password.0).await?;
    Ok(Json(PasswordSetResponse { email: operator.email, name: operator.name }))
}

/// Changes the operator's own name and what it is pushed about.
#[utoipa::path(patch, path = "/mobile/me", operation_id = "mobile_update_me", tag = "mobile",
    security(("bearer" = [])), request_body = AccountPatchRequest,
    responses((status = 200, body = AccountResponse), AccountErrors))]
async fn update_account(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    JsonBody(input): JsonBody<AccountPatchRequest>,
) -> Result<Json<AccountResponse>, ApiError> {
    let operator = s.account.update(&session, input.into()).await?;
    Ok(Json(AccountResponse { user: (&operator).into() }))
}

/// Changes the operator's password, given the current one. Every other
/// sign-in of the operator ends (with its devices); this one stays.
#[utoipa::path(post, path = "/mobile/me/password", operation_id = "mobile_change_password", tag = "mobile",
    security(("bearer" = [])), request_body = PasswordChangeRequest,
    responses((status = 204, description = "Changed"), PasswordChangeErrors))]
async fn change_password(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    JsonBody(input): JsonBody<PasswordChangeRequest>,
) -> Result<StatusCode, ApiError> {
    s.account.change_password(&session, input.current_password.0, input.new_password.0).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The operator's sign-ins that still hold: mobile logins, web sessions
/// and personal tokens, latest used first; `current` marks this one.
#[utoipa::path(get, path = "/mobile/me/sign-ins", operation_id = "mobile_list_sign_ins", tag = "mobile",
    security(("bearer" = [])), responses((status = 200, body = SignInListResponse), DeviceListErrors))]
async fn list_sign_ins(State(s): State<AppState>, Authenticated(session): Authenticated) -> Result<Json<SignInListResponse>, ApiError> {
    let list = s.account.sign_ins(&session).await?;
    Ok(Json(SignInListResponse { sign_ins: list.iter().map(|r| SignInView::new(r, session.token_id)).collect() }))
}

/// Ends one of the operator's sign-ins, with the devices it registered
/// (this one too: that signs out).
#[utoipa::path(delete, path = "/mobile/me/sign-ins/{id}", operation_id = "mobile_end_sign_in", tag = "mobile",
    security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 204, description = "Ended"), SignInEndErrors))]
async fn end_sign_in(State(s): State<AppState>, Authenticated(session): Authenticated, PathId(id): PathId) -> Result<StatusCode, ApiError> {
    s.account.end_sign_in(&session, TokenId(id)).await?;
    Ok(StatusCode::NO_CONTENT)
}
