//! Canned responses: every operator reads them (`mobile/`), admins write
//! them (`admin/`).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use parley_domain::model::CannedId;
use utoipa_axum::routes;

use super::Mount;
use super::openapi::{AdminErrors, AdminRemoveErrors, DeviceListErrors};
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Authenticated, JsonBody, PathId};
use crate::requests::admin::{CannedResponseCreateRequest, CannedResponsePatchRequest};
use crate::views::admin::{CannedResponseListResponse, CannedResponseResponse, CannedResponseView};

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(list_canned)).routes(routes!(create_canned)).routes(routes!(update_canned, delete_canned))
}

/// The tenant's canned responses, by shortcut: what the reply box offers
/// after `/`.
#[utoipa::path(get, path = "/mobile/canned-responses", operation_id = "mobile_list_canned_responses", tag = "mobile",
    security(("bearer" = [])), responses((status = 200, body = CannedResponseListResponse), DeviceListErrors))]
async fn list_canned(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
) -> Result<Json<CannedResponseListResponse>, ApiError> {
    let list = s.canned.list(&session).await?;
    Ok(Json(CannedResponseListResponse { canned_responses: list.iter().map(CannedResponseView::from).collect() }))
}

/// Adds a canned response. A shortcut another response has is a conflict
/// (409), as is a 501st response.
#[utoipa::path(post, path = "/admin/canned-responses", operation_id = "admin_create_canned_response", tag = "admin",
    security(("bearer" = [])), request_body = CannedResponseCreateRequest,
    responses((status = 201, body = CannedResponseResponse), AdminErrors))]
async fn create_canned(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    JsonBody(input): JsonBody<CannedResponseCreateRequest>,
) -> Result<(StatusCode, Json<CannedResponseResponse>), ApiError> {
    let created = s.canned.create(&session, input.into()).await?;
    Ok((StatusCode::CREATED, Json(CannedResponseResponse { canned_response: (&created).into() })))
}

/// Changes a canned response's shortcut, text or both.
#[utoipa::path(patch, path = "/admin/canned-responses/{id}", operation_id = "admin_update_canned_response", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path)), request_body = CannedResponsePatchRequest,
    responses((status = 200, body = CannedResponseResponse), AdminErrors))]
async fn update_canned(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
    JsonBody(input): JsonBody<CannedResponsePatchRequest>,
) -> Result<Json<CannedResponseResponse>, ApiError> {
    let updated = s.canned.update(&session, CannedId(id), input.patch()?).await?;
    Ok(Json(CannedResponseResponse { canned_response: (&updated).into() }))
}

#[utoipa::path(delete, path = "/admin/canned-responses/{id}", operation_id = "admin_delete_canned_response", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 204, description = "Deleted"), AdminRemoveErrors))]
async fn delete_canned(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
) -> Result<StatusCode, ApiError> {
    s.canned.delete(&session, CannedId(id)).await?;
    Ok(StatusCode::NO_CONTENT)
}
