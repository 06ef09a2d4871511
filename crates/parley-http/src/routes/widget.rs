//! The visitor widget API (public installation token).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::response::sse::Event;
use parley_domain::attachments::links::Links;
use parley_domain::events::EventKind;
use parley_domain::feed::{FeedItem, Reader};
use parley_domain::widget::Synced;
use utoipa_axum::routes;

use super::Mount;
use super::openapi::{IdentityWriteErrors, ReadErrors, StreamErrors, TranscriptErrors, WriteErrors};
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{ClientCaller, JsonBody, QueryFields};
use crate::requests::widget::*;
use crate::stream::{self, Holder};
use crate::views::widget::*;

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(config))
        .routes(routes!(installation_health))
        .routes(routes!(ping))
        .routes(routes!(sync_visitor))
        .routes(routes!(open_conversation))
        .routes(routes!(list_messages, post_message))
        .routes(routes!(events))
        .routes(routes!(mark_read))
        .routes(routes!(request_transcript))
        .routes(routes!(typing))
}

/// The widget's configuration: tenant, site (with what the widget shows)
/// and installation.
#[utoipa::path(get, path = "/widget/config/{token}", operation_id = "widget_config", tag = "widget",
    params(("token" = String, Path, description = "Installation token"), ConfigParams),
    responses((status = 200, body = WidgetConfigResponse), ReadErrors))]
async fn config(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    Path(token): Path<String>,
    QueryFields(q): QueryFields<ConfigParams>,
) -> Result<Json<WidgetConfigResponse>, ApiError> {
    let presented = s.widget.config(&token, &caller, q.lang.as_ref().map_or("", |l| l.0.as_str())).await?;
    Ok(Json(WidgetConfigResponse::new(&presented, &s.verification.methods())))
}

/// How the installation is doing, with warnings a partner can act on.
/// Answers for disabled installations too, and from any origin.
#[utoipa::path(get, path = "/widget/installations/{token}/health", operation_id = "widget_installation_health", tag = "widget",
    params(("token" = String, Path, description = "Installation token"), HealthParams),
    responses((status = 200, body = InstallationHealthResponse), ReadErrors))]
async fn installation_health(
    State(s): State<AppState>,
    Path(token): Path<String>,
    QueryFields(q): QueryFields<HealthParams>,
) -> Result<Json<InstallationHealthResponse>, ApiError> {
    let health = s.widget.installation_health(&token, q.current_url.map(|u| u.0)).await?;
    let ctx = &health.context;
    Ok(Json(InstallationHealthResponse {
        tenant: (&ctx.tenant).into(),
        site: (&ctx.site).into(),
        installation: InstallationView::new(&ctx.installation, &s.verification.methods()),
        widget: (&ctx.installation).into(),
        warnings: health.warnings,
    }))
}

/// Heartbeat: the widget reports that it runs, where and in which version.
#[utoipa::path(post, path = "/widget/ping", operation_id = "widget_ping", tag = "widget",
    request_body = WidgetPingRequest,
    responses((status = 200, description = "Heartbeat accepted", body = WidgetPingResponse), WriteErrors))]
async fn ping(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    JsonBody(input): JsonBody<WidgetPingRequest>,
) -> Result<Json<WidgetPingResponse>, ApiError> {
    let ctx = s.widget.ping(&caller, input.into()).await?;
    Ok(Json(WidgetPingResponse {
        installation: InstallationView::new(&ctx.installation, &s.verification.methods()),
        site: (&ctx.site).into(),
    }))
}

/// Creates the visitor (201) or synchronises the fields it sends (200).
#[utoipa::path(post, path = "/widget/visitors", operation_id = "widget_sync_visitor", tag = "widget",
    request_body = WidgetVisitorRequest,
    responses(
        (status = 200, description = "Existing visitor synchronised", body = WidgetVisitorResponse),
        (status = 201, description = "Visitor created", body = WidgetVisitorResponse),
        IdentityWriteErrors))]
async fn sync_visitor(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    JsonBody(input): JsonBody<WidgetVisitorRequest>,
) -> Result<(StatusCode, Json<WidgetVisitorResponse>), ApiError> {
    let synced = s.widget.sync_visitor(&caller, input.into()).await?;
    let status = match synced.synced {
        Synced::Created => StatusCode::CREATED,
        Synced::Updated => StatusCode::OK,
    };
    let conversation = synced.conversation.as_ref().map(Into::into);
    Ok((status, Json(WidgetVisitorResponse { visitor: (&synced.visitor).into(), conversation })))
}

/// Opens a conversation with its first message. `privacy_accepted` must be true.
#[utoipa::path(post, path = "/widget/conversations", operation_id = "widget_open_conversation", tag = "widget",
    request_body = WidgetConversationRequest,
    responses((status = 201, body = WidgetConversationResponse), IdentityWriteErrors))]
async fn open_conversation(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    JsonBody(input): JsonBody<WidgetConversationRequest>,
) -> Result<(StatusCode, Json<WidgetConversationResponse>), ApiError> {
    let (conversation, messages) = s.widget.open_conversation(&caller, input.into()).await?;
    Ok((
        StatusCode::CREATED,
        Json(WidgetConversationResponse {
            conversation: (&conversation).into(),
            messages: self::messages(&messages, s.attachments.links()),
        }),
    ))
}

/// Messages of a conversation, oldest first, at most 100: those after
/// `after_id`, or the latest ones.
#[utoipa::path(get, path = "/widget/conversations/{public_id}/messages", operation_id = "widget_list_messages", tag = "widget",
    params(("public_id" = String, Path, description = "Conversation public id"), MessagesParams),
    responses((status = 200, body = WidgetMessagesResponse), ReadErrors))]
async fn list_messages(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    Path(public_id): Path<String>,
    QueryFields(q): QueryFields<MessagesParams>,
) -> Result<Json<WidgetMessagesResponse>, ApiError> {
    let (conversation, list, cursor) = s.widget.messages(&caller, &q.token.0, public_id, q.after_id.map(|a| a.0)).await?;
    let cursor = s.feed.visitor_cursor_text(conversation.id, cursor);
    Ok(Json(WidgetMessagesResponse { conversation: (&conversation).into(), messages: messages(&list, s.attachments.links()), cursor }))
}

/// The conversation live, as its visitor sees it: `message.created`
/// (`data`: `{"message"}`) and `conversation.updated` (`data`:
/// `{"conversation"}`), each with its cursor as `id`. It replays what
/// came after `Last-Event-ID` (or `last_event_id`) first; an unknown or
/// expired cursor gets one `reset` event (`data: {}`) and the stream
/// ends: reload the messages and follow from their `cursor`. A
/// `: keep-alive` comment comes between events.
#[utoipa::path(get, path = "/widget/conversations/{public_id}/events", operation_id = "widget_events", tag = "widget",
    params(("public_id" = String, Path, description = "Conversation public id"), StreamParams),
    responses(
        (status = 200, description = "The stream: each event as `WidgetStreamEvent` states it", content_type = "text/event-stream",
            body = crate::views::stream::WidgetStreamEvent),
        StreamErrors))]
async fn events(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    Path(public_id): Path<String>,
    headers: HeaderMap,
    QueryFields(q): QueryFields<StreamParams>,
) -> Result<Response, ApiError> {
    let slot = s.streams.take(caller.key())?;
    let reader = s.widget.stream_reader(&caller, &q.token.0, public_id.clone()).await?;
    let Reader::Visitor(scope, conversation) = reader else { return Err(ApiError::RouteNotFound) };
    // Emails of what the visitor misses wait while this is open.
    let presence = s.presence.enter(scope.tenant, conversation);
    let looked_at = tokio::time::Instant::now();
    let holder = Holder::Visitor { caller, token: q.token.0, public_id, looked_at, _presence: presence };
    stream::open(&s, slot, &headers, q.last_event_id.as_ref().map(|c| c.0.as_str()), reader, holder, widget_event).await
}

/// What a visitor's stream shows of an entry: its messages (never a
/// note) and the conversation's changes.
fn widget_event(item: &FeedItem, links: &Links) -> Option<Event> {
    match item.kind {
        EventKind::MessageCreated => {
            let message = item.message.as_ref().filter(|m| !m.internal)?;
            stream::event(item, WidgetMessageEventData { message: MessageView::new(message, links) })
        }
        EventKind::ConversationUpdated | EventKind::ConversationClosed | EventKind::VerificationCompleted => {
            stream::event(item, WidgetConversationEventData { conversation: (&item.conversation.conversation).into() })
        }
        _ => None,
    }
}

/// The panel showed the messages up to `message_id`: the operator
/// messages among them are read (operators see `read_by_visitor_at`).
/// Never backwards.
#[utoipa::path(post, path = "/widget/conversations/{public_id}/read", operation_id = "widget_mark_read", tag = "widget",
    params(("public_id" = String, Path, description = "Conversation public id")),
    request_body = WidgetReadRequest,
    responses((status = 200, body = WidgetReadResponse), WriteErrors))]
async fn mark_read(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    Path(public_id): Path<String>,
    JsonBody(input): JsonBody<WidgetReadRequest>,
) -> Result<Json<WidgetReadResponse>, ApiError> {
    let read = s.continuity.mark_read(&caller, &input.token.0, public_id, input.message_id).await?;
    Ok(Json(WidgetReadResponse { message_id: read.message_id.0, unread_count: read.unread_count }))
}

/// The visitor is typing: the conversation's operators see it on their
/// streams for 5 seconds. Not stored; at most one every 2 seconds is
/// passed on (more are answered the same and dropped).
#[utoipa::path(post, path = "/widget/conversations/{public_id}/typing", operation_id = "widget_typing", tag = "widget",
    params(("public_id" = String, Path, description = "Conversation public id")),
    request_body = WidgetTypingRequest,
    responses((status = 204, description = "Passed on, or dropped as too soon after the last"), WriteErrors))]
async fn typing(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    Path(public_id): Path<String>,
    JsonBody(input): JsonBody<WidgetTypingRequest>,
) -> Result<StatusCode, ApiError> {
    s.typing.visitor(&caller, &input.token.0, public_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Emails the conversation to the visitor's address: once an hour (429
/// before), 422 without an address, 409 once the visitor unsubscribed
/// from the conversation's emails.
#[utoipa::path(post, path = "/widget/conversations/{public_id}/transcript", operation_id = "widget_request_transcript", tag = "widget",
    params(("public_id" = String, Path, description = "Conversation public id")),
    request_body = WidgetTranscriptRequest,
    responses((status = 202, description = "The transcript is on its way", body = WidgetTranscriptResponse), TranscriptErrors))]
async fn request_transcript(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    Path(public_id): Path<String>,
    JsonBody(input): JsonBody<WidgetTranscriptRequest>,
) -> Result<(StatusCode, Json<WidgetTranscriptResponse>), ApiError> {
    let address = s.continuity.request_transcript(&caller, &input.token.0, public_id).await?;
    Ok((StatusCode::ACCEPTED, Json(WidgetTranscriptResponse { email: parley_domain::mask::email(&address) })))
}

/// Adds a visitor message. A closed conversation reopens.
#[utoipa::path(post, path = "/widget/conversations/{public_id}/messages", operation_id = "widget_post_message", tag = "widget",
    params(("public_id" = String, Path, description = "Conversation public id")),
    request_body = WidgetMessageCreateRequest,
    responses((status = 201, body = WidgetMessageCreateResponse), IdentityWriteErrors))]
async fn post_message(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    Path(public_id): Path<String>,
    JsonBody(input): JsonBody<WidgetMessageCreateRequest>,
) -> Result<(StatusCode, Json<WidgetMessageCreateResponse>), ApiError> {
    let (message, conversation) = s.widget.post_message(&caller, input.into_input(public_id)?).await?;
    let message = MessageView::new(&message, s.attachments.links());
    Ok((StatusCode::CREATED, Json(WidgetMessageCreateResponse { message, conversation: (&conversation).into() })))
}
