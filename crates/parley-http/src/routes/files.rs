//! Attachments: uploads from the widget and from operators, and the
//! signed links every file is read through.
//!
//! A file answer is made to be harmless whatever it holds: pictures
//! Parley decoded go inline as their own type, anything else as an
//! `application/octet-stream` download; `nosniff` stops a browser from
//! guessing otherwise, and `sandbox` keeps a document that is opened
//! anyway from running script or reaching this origin.

use axum::Json;
use axum::body::Body;
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use parley_domain::attachments::links::Variant;
use parley_domain::model::ConversationId;
use utoipa::ToSchema;
use utoipa_axum::routes;

use super::Mount;
use super::openapi::{FileErrors, UploadErrors};
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Authenticated, ClientCaller, FileUpload, PathId, QueryFields};
use crate::requests::widget::{FileLinkParams, UploadParams};
use crate::views::widget::UploadResponse;

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(widget_upload)).routes(routes!(mobile_upload)).routes(routes!(file)).routes(routes!(thumbnail))
}

/// The form of an upload.
#[derive(ToSchema)]
#[allow(dead_code, reason = "describes the form for the API document; the body is read as a stream")]
struct UploadForm {
    /// The file; its type is told from its content, and its name is only
    /// shown.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
}

/// Uploads a file into the visitor's conversation, to be named in a
/// message's `attachment_ids` within a day (after that it is removed).
#[utoipa::path(post, path = "/widget/conversations/{public_id}/attachments", operation_id = "widget_upload", tag = "widget",
    params(("public_id" = String, Path, description = "Conversation public id"), UploadParams),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 201, description = "Received", body = UploadResponse), UploadErrors))]
async fn widget_upload(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    Path(public_id): Path<String>,
    QueryFields(q): QueryFields<UploadParams>,
    request: Request,
) -> Result<(StatusCode, Json<UploadResponse>), ApiError> {
    let target = s.widget.upload_target(&caller, &q.token.0, public_id).await?;
    received(&s, target, request).await
}

/// Uploads a file into a conversation the operator sees, to be named in
/// a reply's `attachment_ids` within a day.
#[utoipa::path(post, path = "/mobile/conversations/{id}/attachments", operation_id = "mobile_upload", tag = "mobile",
    security(("bearer" = [])), params(("id" = i64, Path)),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 201, description = "Received", body = UploadResponse), UploadErrors))]
async fn mobile_upload(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
    request: Request,
) -> Result<(StatusCode, Json<UploadResponse>), ApiError> {
    let target = s.inbox.upload_target(&session, ConversationId(id)).await?;
    received(&s, target, request).await
}

/// Reads the file and keeps it. The body is read only now, once the
/// caller may upload there: nobody gets a byte read for a wrong token.
pub(crate) async fn received(
    s: &AppState,
    target: parley_domain::attachments::UploadTarget,
    request: Request,
) -> Result<(StatusCode, Json<UploadResponse>), ApiError> {
    let upload = FileUpload::from_request(request, s).await?;
    let attachment = s.attachments.upload(target, &upload.name, upload.body).await?;
    let body = UploadResponse::new(&attachment).ok_or(ApiError::Internal)?;
    Ok((StatusCode::CREATED, Json(body)))
}

/// A file, through the link a message gave (`url`).
#[utoipa::path(get, path = "/files/{id}", operation_id = "file", tag = "files",
    params(("id" = String, Path, description = "Attachment id"), FileLinkParams),
    responses((status = 200, description = "The file: a picture inline, anything else as a download",
        content((Vec<u8> = "application/octet-stream"), (Vec<u8> = "image/png"), (Vec<u8> = "image/jpeg"), (Vec<u8> = "image/gif"), (Vec<u8> = "image/webp"))),
        FileErrors))]
async fn file(
    State(s): State<AppState>,
    Path(id): Path<String>,
    QueryFields(q): QueryFields<FileLinkParams>,
) -> Result<Response, ApiError> {
    serve(&s, id, Variant::Original, q).await
}

/// A picture's thumbnail, through the link a message gave
/// (`thumbnail_url`): at most 320 pixels on its longest side.
#[utoipa::path(get, path = "/files/{id}/thumbnail", operation_id = "file_thumbnail", tag = "files",
    params(("id" = String, Path, description = "Attachment id"), FileLinkParams),
    responses((status = 200, description = "The thumbnail", content((Vec<u8> = "image/jpeg"), (Vec<u8> = "image/png"))), FileErrors))]
async fn thumbnail(
    State(s): State<AppState>,
    Path(id): Path<String>,
    QueryFields(q): QueryFields<FileLinkParams>,
) -> Result<Response, ApiError> {
    serve(&s, id, Variant::Thumbnail, q).await
}

async fn serve(s: &AppState, id: String, variant: Variant, q: FileLinkParams) -> Result<Response, ApiError> {
    let download = s.attachments.open(id, variant, q.expires.0, &q.sig.0).await?;
    let now = s.attachments.links().now_seconds();
    let max_age = download.expires.saturating_sub(now).max(0);
    let mut response = Body::from_stream(download.body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(download.content_type));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(download.size));
    let disposition = HeaderValue::from_str(&download.disposition).map_err(|_| ApiError::Internal)?;
    headers.insert(header::CONTENT_DISPOSITION, disposition);
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox; default-src 'none'"));
    // Shown by the widget on the site's own pages: another origin.
    headers.insert("cross-origin-resource-policy", HeaderValue::from_static("cross-origin"));
    let cache = HeaderValue::from_str(&format!("private, max-age={max_age}")).map_err(|_| ApiError::Internal)?;
    headers.insert(header::CACHE_CONTROL, cache);
    Ok(response)
}
