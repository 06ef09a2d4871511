//! Webhook endpoints and their delivery log (admin bearer token).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use parley_domain::model::WebhookId;
use utoipa_axum::routes;

use super::Mount;
use super::openapi::{AdminErrors, AdminReadErrors, AdminRemoveErrors};
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Authenticated, JsonBody, PathId, PathIds, QueryFields};
use crate::requests::admin::*;
use crate::requests::mobile::PageParams;
use crate::views::admin::*;

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(list_webhooks, create_webhook))
        .routes(routes!(delete_webhook))
        .routes(routes!(rotate_secret))
        .routes(routes!(list_deliveries))
        .routes(routes!(redeliver))
        .routes(routes!(send_test))
}

/// The tenant's webhook endpoints (without secrets).
#[utoipa::path(get, path = "/admin/webhooks", operation_id = "admin_list_webhooks", tag = "admin",
    security(("bearer" = [])), responses((status = 200, body = WebhookListResponse), AdminReadErrors))]
async fn list_webhooks(State(s): State<AppState>, Authenticated(session): Authenticated) -> Result<Json<WebhookListResponse>, ApiError> {
    let list = s.webhooks.list(&session).await?;
    Ok(Json(WebhookListResponse { webhooks: list.iter().map(|w| WebhookView::new(w, false)).collect() }))
}

/// Registers an endpoint. The answer carries the signing `secret`, shown this once.
#[utoipa::path(post, path = "/admin/webhooks", operation_id = "admin_create_webhook", tag = "admin",
    security(("bearer" = [])), request_body = WebhookCreateRequest,
    responses((status = 201, body = WebhookResponse), AdminErrors))]
async fn create_webhook(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    JsonBody(input): JsonBody<WebhookCreateRequest>,
) -> Result<(StatusCode, Json<WebhookResponse>), ApiError> {
    let webhook = s.webhooks.create(&session, input.into()).await?;
    Ok((StatusCode::CREATED, Json(WebhookResponse { webhook: WebhookView::new(&webhook, true) })))
}

/// Deletes an endpoint and its delivery log.
#[utoipa::path(delete, path = "/admin/webhooks/{id}", operation_id = "admin_delete_webhook", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 204, description = "Deleted"), AdminRemoveErrors))]
async fn delete_webhook(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
) -> Result<StatusCode, ApiError> {
    s.webhooks.delete(&session, WebhookId(id)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Replaces the signing secret. The old one keeps signing, next to the new
/// one, for 24 hours.
#[utoipa::path(post, path = "/admin/webhooks/{id}/rotate-secret", operation_id = "admin_rotate_webhook_secret", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 200, body = WebhookResponse), AdminErrors))]
async fn rotate_secret(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
) -> Result<Json<WebhookResponse>, ApiError> {
    let webhook = s.webhooks.rotate_secret(&session, WebhookId(id)).await?;
    Ok(Json(WebhookResponse { webhook: WebhookView::new(&webhook, true) }))
}

/// The endpoint's deliveries, newest first, each with its attempts.
#[utoipa::path(get, path = "/admin/webhooks/{id}/deliveries", operation_id = "admin_list_deliveries", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path), crate::requests::mobile::PageParams),
    responses((status = 200, body = DeliveryListResponse), AdminReadErrors))]
async fn list_deliveries(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
    QueryFields(q): QueryFields<PageParams>,
) -> Result<Json<DeliveryListResponse>, ApiError> {
    let (list, meta) = s.webhooks.deliveries(&session, WebhookId(id), q.page()).await?;
    Ok(Json(DeliveryListResponse { deliveries: list.iter().map(Into::into).collect(), meta: meta.into() }))
}

/// Sends the delivery's event to the endpoint again, as a new delivery.
#[utoipa::path(post, path = "/admin/webhooks/{id}/deliveries/{delivery_id}/redeliver", operation_id = "admin_redeliver", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path), ("delivery_id" = i64, Path)),
    responses((status = 202, description = "Queued", body = DeliveryResponse), AdminErrors))]
async fn redeliver(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathIds(id, delivery): PathIds,
) -> Result<(StatusCode, Json<DeliveryResponse>), ApiError> {
    let delivery = s.webhooks.redeliver(&session, WebhookId(id), parley_domain::model::DeliveryId(delivery)).await?;
    Ok((StatusCode::ACCEPTED, Json(DeliveryResponse { delivery: (&delivery).into() })))
}

/// Sends a test event of the chosen kind to this endpoint alone: an
/// ordinary signed delivery, in the log, whose envelope carries
/// `"test": true`. The endpoint need not subscribe to the kind.
#[utoipa::path(post, path = "/admin/webhooks/{id}/test", operation_id = "admin_test_webhook", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path)), request_body = WebhookTestRequest,
    responses((status = 202, description = "Queued", body = DeliveryResponse), AdminErrors))]
async fn send_test(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
    JsonBody(input): JsonBody<WebhookTestRequest>,
) -> Result<(StatusCode, Json<DeliveryResponse>), ApiError> {
    let delivery = s.webhooks.send_test(&session, WebhookId(id), input.event).await?;
    Ok((StatusCode::ACCEPTED, Json(DeliveryResponse { delivery: (&delivery).into() })))
}
