//! The operator mobile API (bearer token).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use parley_domain::DomainError;
use parley_domain::auth::SignIn;
use parley_domain::model::ConversationId;
use utoipa_axum::routes;

use super::Mount;
use super::openapi::{CatchupErrors, LoginErrors, OperatorErrors, OperatorReadErrors};
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Authenticated, ClientCaller, JsonBody, OptionalJsonBody, PathId, QueryFields, bearer_token};
use crate::requests::devices::ReadRequest;
use crate::requests::mobile::*;
use crate::requests::schema;
use crate::stream;
use crate::views::at;
use crate::views::mobile::*;

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(login))
        .routes(routes!(logout))
        .routes(routes!(me))
        .routes(routes!(list_conversations))
        .routes(routes!(get_conversation))
        .routes(routes!(list_messages, reply))
        .routes(routes!(assign))
        .routes(routes!(transfer))
        .routes(routes!(close))
        .routes(routes!(mark_read))
        .routes(routes!(typing))
        .routes(routes!(events))
}

/// What the operator missed: the changes of every conversation it can
/// see after `after`, oldest first, at most 100; with `wait`, held until
/// one comes (long polling). An expired or unknown cursor answers 410.
///
/// With `Accept: text/event-stream` the same changes come as a live
/// stream: each event's `id` is its cursor, `event` its kind and `data`
/// what `data` holds here. It resumes after `Last-Event-ID` (or
/// `last_event_id`, or `after`); an unknown or expired cursor gets one
/// `reset` event and the stream ends. It ends too when the token expires
/// or is revoked.
#[utoipa::path(get, path = "/mobile/events", operation_id = "mobile_events", tag = "mobile",
    security(("bearer" = [])), params(OperatorEventsParams),
    responses(
        (status = 200, description = "The events (JSON), or the stream (with `Accept: text/event-stream`)", content(
            (OperatorEventsResponse = "application/json"),
            (crate::views::stream::OperatorStreamEvent = "text/event-stream"),
        )),
        CatchupErrors))]
async fn events(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    Authenticated(session): Authenticated,
    headers: HeaderMap,
    QueryFields(q): QueryFields<OperatorEventsParams>,
) -> Result<Response, ApiError> {
    // `Authenticated` has read this token: streams and long polls check
    // it again while they wait.
    let token = bearer_token(&headers).ok_or(DomainError::Unauthenticated)?.to_owned();
    let scope = session.operator.scope();
    if !stream::wants_stream(&headers) {
        // Only a poll that may wait holds anything while it does.
        let waits = q.after.is_some() && !q.wait().is_zero();
        let slot = if waits { Some(s.streams.take(caller.key())?) } else { None };
        let page = stream::long_poll(&s, slot, q.after, q.wait(), token, SignIn::Mobile, scope).await?;
        let links = s.attachments.links();
        let events = page.items.iter().map(|item| OperatorEventView::new(item, links)).collect();
        let body = OperatorEventsResponse { events, cursor: page.cursor.to_string() };
        return Ok(Json(body).into_response());
    }
    let slot = s.streams.take(caller.key())?;
    stream::open_operator(&s, slot, &headers, q.last_event_id.or(q.after), token, SignIn::Mobile, scope).await
}

/// Signs an operator in and returns a bearer token.
#[utoipa::path(post, path = "/mobile/login", operation_id = "mobile_login", tag = "mobile",
    request_body = MobileLoginRequest,
    responses((status = 200, body = MobileLoginResponse), LoginErrors))]
async fn login(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    JsonBody(input): JsonBody<MobileLoginRequest>,
) -> Result<Json<MobileLoginResponse>, ApiError> {
    let outcome = s.auth.login(caller.key(), input.into(), SignIn::Mobile).await?;
    let session = &outcome.session;
    Ok(Json(MobileLoginResponse {
        token: outcome.token,
        token_type: "Bearer",
        expires_at: at(session.expires_at),
        user: (&session.operator).into(),
        tenant: (&session.tenant).into(),
        device_id: outcome.device_mark,
    }))
}

/// Revokes the token in use.
#[utoipa::path(post, path = "/mobile/logout", operation_id = "mobile_logout", tag = "mobile",
    security(("bearer" = [])),
    responses((status = 204, description = "Signed out"), OperatorErrors))]
async fn logout(State(s): State<AppState>, Authenticated(session): Authenticated) -> Result<StatusCode, ApiError> {
    s.auth.logout(&session).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The signed-in operator and its tenant.
#[utoipa::path(get, path = "/mobile/me", operation_id = "mobile_me", tag = "mobile",
    security(("bearer" = [])),
    responses((status = 200, body = MobileMeResponse), OperatorReadErrors))]
async fn me(State(s): State<AppState>, Authenticated(session): Authenticated) -> Result<Json<MobileMeResponse>, ApiError> {
    let unread = s.inbox.unread_conversations(&session).await?;
    Ok(Json(MobileMeResponse::new(&session, unread)))
}

/// Moves the caller's read marker in the conversation to `message_id`
/// (never backwards); the conversation's `unread_count` and `me`'s
/// `unread_conversations` count from it.
#[utoipa::path(post, path = "/mobile/conversations/{id}/read", operation_id = "mobile_mark_read", tag = "mobile",
    security(("bearer" = [])), params(("id" = i64, Path)), request_body = ReadRequest,
    responses((status = 200, body = ReadMarkerResponse), OperatorErrors))]
async fn mark_read(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
    JsonBody(input): JsonBody<ReadRequest>,
) -> Result<Json<ReadMarkerResponse>, ApiError> {
    let marker = s.inbox.mark_read(&session, ConversationId(id), input.message_id).await?;
    Ok(Json((&marker).into()))
}

/// The operator is typing in the conversation: the visitor's widget shows
/// it for 5 seconds. Not stored; at most one every 2 seconds is passed on
/// (more are answered the same and dropped).
#[utoipa::path(post, path = "/mobile/conversations/{id}/typing", operation_id = "mobile_typing", tag = "mobile",
    security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 204, description = "Passed on, or dropped as too soon after the last"), OperatorErrors))]
async fn typing(State(s): State<AppState>, Authenticated(session): Authenticated, PathId(id): PathId) -> Result<StatusCode, ApiError> {
    s.typing.operator(&session, ConversationId(id)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The conversations visible to the operator, most recent activity first.
#[utoipa::path(get, path = "/mobile/conversations", operation_id = "mobile_list_conversations", tag = "mobile",
    security(("bearer" = [])), params(ConversationListParams),
    responses((status = 200, body = MobileConversationListResponse), OperatorReadErrors))]
async fn list_conversations(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    QueryFields(q): QueryFields<ConversationListParams>,
) -> Result<Json<MobileConversationListResponse>, ApiError> {
    let (list, meta, cursor) = s.inbox.list(&session, q.status(), q.page()).await?;
    Ok(Json(MobileConversationListResponse {
        conversations: list.iter().map(Into::into).collect(),
        meta: ConversationListMetaView::new(meta, &cursor),
    }))
}

/// One conversation.
#[utoipa::path(get, path = "/mobile/conversations/{id}", operation_id = "mobile_get_conversation", tag = "mobile",
    security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 200, body = MobileConversationResponse), OperatorReadErrors))]
async fn get_conversation(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
) -> Result<Json<MobileConversationResponse>, ApiError> {
    let details = s.inbox.get(&session, ConversationId(id)).await?;
    Ok(Json(MobileConversationResponse { conversation: (&details).into() }))
}

/// Messages of a conversation, operator-only notes included; `after_id`
/// polling as in the widget.
#[utoipa::path(get, path = "/mobile/conversations/{id}/messages", operation_id = "mobile_list_messages", tag = "mobile",
    security(("bearer" = [])), params(("id" = i64, Path), OperatorMessagesParams),
    responses((status = 200, body = MobileMessagesResponse), OperatorReadErrors))]
async fn list_messages(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
    QueryFields(q): QueryFields<OperatorMessagesParams>,
) -> Result<Json<MobileMessagesResponse>, ApiError> {
    let list = s.inbox.messages(&session, ConversationId(id), q.after_id.map(|a| a.0)).await?;
    let links = s.attachments.links();
    Ok(Json(MobileMessagesResponse { messages: list.iter().map(|m| OperatorMessageView::new(m, links)).collect() }))
}

/// Sends an operator message. A closed conversation reopens.
#[utoipa::path(post, path = "/mobile/conversations/{id}/messages", operation_id = "mobile_reply", tag = "mobile",
    security(("bearer" = [])), params(("id" = i64, Path)), request_body = MobileMessageRequest,
    responses((status = 200, description = "Message recorded", body = MobileMessageResponse), OperatorErrors))]
async fn reply(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
    JsonBody(input): JsonBody<MobileMessageRequest>,
) -> Result<Json<MobileMessageResponse>, ApiError> {
    let content = schema::content(input.body, input.attachment_ids)?;
    let (message, details) = s.inbox.reply(&session, ConversationId(id), content, input.client_message_id.map(|c| c.0)).await?;
    let message = OperatorMessageView::new(&message, s.attachments.links());
    Ok(Json(MobileMessageResponse { message, conversation: (&details).into() }))
}

/// Takes the conversation (no body) or assigns it to `operator_id`.
#[utoipa::path(post, path = "/mobile/conversations/{id}/assign", operation_id = "mobile_assign", tag = "mobile",
    security(("bearer" = [])), params(("id" = i64, Path)), request_body(content = Option<AssignRequest>),
    responses((status = 200, description = "Conversation assigned", body = MobileConversationResponse), OperatorErrors))]
async fn assign(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
    OptionalJsonBody(input): OptionalJsonBody<AssignRequest>,
) -> Result<Json<MobileConversationResponse>, ApiError> {
    let target = input.and_then(|a| a.operator_id);
    let details = s.inbox.assign(&session, ConversationId(id), target).await?;
    Ok(Json(MobileConversationResponse { conversation: (&details).into() }))
}

/// Hands the conversation to another operator, with an optional note for operators.
#[utoipa::path(post, path = "/mobile/conversations/{id}/transfer", operation_id = "mobile_transfer", tag = "mobile",
    security(("bearer" = [])), params(("id" = i64, Path)), request_body = TransferRequest,
    responses((status = 200, description = "Conversation transferred", body = MobileConversationResponse), OperatorErrors))]
async fn transfer(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
    JsonBody(input): JsonBody<TransferRequest>,
) -> Result<Json<MobileConversationResponse>, ApiError> {
    let details = s.inbox.transfer(&session, ConversationId(id), input.operator_id, input.note.map(|n| n.0)).await?;
    Ok(Json(MobileConversationResponse { conversation: (&details).into() }))
}

/// Closes the conversation; closing a closed conversation changes nothing.
#[utoipa::path(post, path = "/mobile/conversations/{id}/close", operation_id = "mobile_close", tag = "mobile",
    security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 200, description = "Conversation closed", body = MobileConversationResponse), OperatorErrors))]
async fn close(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
) -> Result<Json<MobileConversationResponse>, ApiError> {
    let details = s.inbox.close(&session, ConversationId(id)).await?;
    Ok(Json(MobileConversationResponse { conversation: (&details).into() }))
}
