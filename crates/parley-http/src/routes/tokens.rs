//! Personal access tokens of the signed-in admin (admin bearer token or
//! the web app): made by name to try the mobile API, listed, revoked.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use parley_domain::model::TokenId;
use utoipa_axum::routes;

use super::Mount;
use super::openapi::{AdminErrors, AdminReadErrors, AdminRemoveErrors};
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Authenticated, JsonBody, PathId};
use crate::requests::admin::PersonalTokenCreateRequest;
use crate::views::admin::*;

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(list_tokens, create_token)).routes(routes!(revoke_token))
}

/// The signed-in admin's personal access tokens not revoked (expired ones
/// included), newest first.
#[utoipa::path(get, path = "/admin/tokens", operation_id = "admin_list_tokens", tag = "admin",
    security(("bearer" = [])), responses((status = 200, body = PersonalTokenListResponse), AdminReadErrors))]
async fn list_tokens(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
) -> Result<Json<PersonalTokenListResponse>, ApiError> {
    let list = s.auth.personal_tokens(&session).await?;
    Ok(Json(PersonalTokenListResponse { tokens: list.iter().map(|t| PersonalTokenView::new(t, None)).collect() }))
}

/// Makes a personal access token for the mobile API. The answer carries
/// it (`access_token`) this once; only its digest is kept.
#[utoipa::path(post, path = "/admin/tokens", operation_id = "admin_create_token", tag = "admin",
    security(("bearer" = [])), request_body = PersonalTokenCreateRequest,
    responses((status = 201, body = PersonalTokenResponse), AdminErrors))]
async fn create_token(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    JsonBody(input): JsonBody<PersonalTokenCreateRequest>,
) -> Result<(StatusCode, Json<PersonalTokenResponse>), ApiError> {
    let (token, secret) = s.auth.create_personal_token(&session, input.into()).await?;
    Ok((StatusCode::CREATED, Json(PersonalTokenResponse { token: PersonalTokenView::new(&token, Some(secret)) })))
}

/// Revokes one of the signed-in admin's personal tokens at once.
#[utoipa::path(delete, path = "/admin/tokens/{id}", operation_id = "admin_revoke_token", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 204, description = "Revoked"), AdminRemoveErrors))]
async fn revoke_token(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
) -> Result<StatusCode, ApiError> {
    s.auth.revoke_personal_token(&session, TokenId(id)).await?;
    Ok(StatusCode::NO_CONTENT)
}
