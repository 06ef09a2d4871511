//! The devices an operator's sign-in is notified on (bearer token).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use parley_domain::model::DeviceId;
use utoipa_axum::routes;

use super::Mount;
use super::openapi::{DeviceListErrors, DeviceRegisterErrors, DeviceRemoveErrors};
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Authenticated, JsonBody, PathId};
use crate::requests::devices::DeviceRegisterRequest;
use crate::views::mobile::{DeviceListResponse, DeviceResponse};

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(list_devices, register_device)).routes(routes!(remove_device))
}

/// Registers a device for the sign-in of this token: it is notified until
/// the sign-in ends (logout, revocation, expiry, a new password, the
/// operator disabled) or it is removed. A push token registered again
/// moves to the new sign-in.
#[utoipa::path(post, path = "/mobile/devices", operation_id = "mobile_register_device", tag = "mobile",
    security(("bearer" = [])), request_body = DeviceRegisterRequest,
    responses((status = 201, body = DeviceResponse), DeviceRegisterErrors))]
async fn register_device(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    JsonBody(input): JsonBody<DeviceRegisterRequest>,
) -> Result<(StatusCode, Json<DeviceResponse>), ApiError> {
    let device = s.devices.register(&session, input.into()).await?;
    Ok((StatusCode::CREATED, Json(DeviceResponse { device: (&device).into() })))
}

/// The operator's devices whose sign-in still holds, oldest first.
#[utoipa::path(get, path = "/mobile/devices", operation_id = "mobile_list_devices", tag = "mobile",
    security(("bearer" = [])), responses((status = 200, body = DeviceListResponse), DeviceListErrors))]
async fn list_devices(State(s): State<AppState>, Authenticated(session): Authenticated) -> Result<Json<DeviceListResponse>, ApiError> {
    let list = s.devices.list(&session).await?;
    Ok(Json(DeviceListResponse { devices: list.iter().map(Into::into).collect() }))
}

/// Removes one of the operator's devices: it is notified no more.
#[utoipa::path(delete, path = "/mobile/devices/{id}", operation_id = "mobile_remove_device", tag = "mobile",
    security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 204, description = "Removed"), DeviceRemoveErrors))]
async fn remove_device(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
) -> Result<StatusCode, ApiError> {
    s.devices.remove(&session, DeviceId(id)).await?;
    Ok(StatusCode::NO_CONTENT)
}
