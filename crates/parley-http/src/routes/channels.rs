//! The service's verification channels as a tenant admin sees them, and a
//! test message to check one (admin bearer token).

use axum::Json;
use axum::extract::State;
use utoipa_axum::routes;

use super::Mount;
use super::openapi::{AdminReadErrors, ChannelTestErrors};
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Authenticated, JsonBody};
use crate::requests::admin::ChannelTestRequest;
use crate::views::admin::*;

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(channels)).routes(routes!(send_test))
}

/// Which channels this service has, and the methods the widget offers.
#[utoipa::path(get, path = "/admin/verification", operation_id = "admin_verification_channels", tag = "admin",
    security(("bearer" = [])), responses((status = 200, body = VerificationSetupResponse), AdminReadErrors))]
async fn channels(State(s): State<AppState>, Authenticated(session): Authenticated) -> Result<Json<VerificationSetupResponse>, ApiError> {
    let states = s.verification.channel_states(&session)?;
    let methods = s.verification.methods().iter().map(|m| m.as_str()).collect();
    Ok(Json(VerificationSetupResponse {
        verification: VerificationSetupView { methods, channels: states.iter().map(Into::into).collect() },
    }))
}

/// Sends a test email or SMS through the service's channel, answered once
/// the provider took it. Limited per tenant (10 an hour by default) and
/// per recipient, like verification messages.
#[utoipa::path(post, path = "/admin/verification/test", operation_id = "admin_verification_test", tag = "admin",
    security(("bearer" = [])), request_body = ChannelTestRequest,
    responses((status = 200, body = ChannelTestResponse), ChannelTestErrors))]
async fn send_test(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    JsonBody(input): JsonBody<ChannelTestRequest>,
) -> Result<Json<ChannelTestResponse>, ApiError> {
    let sent = s.verification.send_test(&session, input.channel, input.to).await?;
    Ok(Json(ChannelTestResponse { test: (&sent).into() }))
}
