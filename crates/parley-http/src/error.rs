//! The one mapping from errors to HTTP responses.
//!
//! Handlers return `Result<_, ApiError>`; domain errors convert with `?`.
//! Every error leaves as `{"error": {"code", "message", "fields"?}}`.
//! Unexpected failures are logged here with their detail and answered with
//! a generic 500 or 503 that reveals nothing about the internals.

use std::collections::BTreeMap;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use parley_domain::{DomainError, FieldErrors, StoreError};
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug)]
pub enum ApiError {
    Domain(DomainError),
    MalformedJson(String),
    PayloadTooLarge,
    /// The body did not arrive whole within the read timeout.
    RequestTimeout,
    UnsupportedMediaType,
    /// An upload that is not `multipart/form-data`.
    NotMultipart,
    /// `POST inbound/email` takes a raw message alone.
    NotMail,
    /// An inbound email over its own, larger, limit.
    MailTooLarge,
    MethodNotAllowed,
    RouteNotFound,
    Internal,
}

impl From<DomainError> for ApiError {
    fn from(e: DomainError) -> Self {
        Self::Domain(e)
    }
}

impl From<FieldErrors> for ApiError {
    fn from(e: FieldErrors) -> Self {
        Self::Domain(DomainError::Validation(e))
    }
}

/// The error body every failing request gets.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable code, such as `validation_failed`.
    #[schema(example = "validation_failed")]
    pub code: &'static str,
    /// A sentence for humans; may change between releases.
    pub message: String,
    /// Only for `validation_failed`: every bad field with its problems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fields: Option<BTreeMap<String, Vec<String>>>,
}

/// What an error becomes on the wire (JSON here, a page in the web app).
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    code: &'static str,
    pub(crate) message: String,
    fields: Option<FieldErrors>,
    pub(crate) retry_after: Option<u64>,
    /// Ask for a bearer token (RFC 6750) on a 401.
    www_authenticate: bool,
}

impl Answer {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into(), fields: None, retry_after: None, www_authenticate: false }
    }

    fn unavailable() -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "The service is temporarily unavailable.")
    }

    fn internal() -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "Something went wrong on our side.")
    }
}

impl ApiError {
    pub(crate) fn answer(self) -> Answer {
        use StatusCode as S;
        match self {
            Self::MalformedJson(m) => Answer::new(S::BAD_REQUEST, "malformed_json", m),
            Self::PayloadTooLarge => Answer::new(S::PAYLOAD_TOO_LARGE, "payload_too_large", "The request body is larger than 64 KiB."),
            Self::RequestTimeout => Answer::new(S::REQUEST_TIMEOUT, "request_timeout", "The request body did not arrive in time."),
            Self::NotMultipart => Answer::new(
                S::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "Send the file as multipart/form-data, in a part named file.",
            ),
            Self::UnsupportedMediaType => Answer::new(
                S::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "Send the body as JSON with content-type: application/json.",
            ),
            Self::NotMail => Answer::new(
                S::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "Send the raw email (RFC 5322) with content-type: message/rfc822.",
            ),
            Self::MailTooLarge => Answer::new(
                S::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!("The email is larger than {} MiB.", crate::routes::INBOUND_LIMIT >> 20),
            ),
            Self::MethodNotAllowed => Answer::new(S::METHOD_NOT_ALLOWED, "method_not_allowed", "This method is not allowed on this path."),
            Self::RouteNotFound => Answer::new(S::NOT_FOUND, "not_found", "No such route."),
            Self::Internal => Answer::internal(),
            Self::Domain(e) => domain_answer(e),
        }
    }
}

fn domain_answer(e: DomainError) -> Answer {
    use StatusCode as S;
    match e {
        DomainError::NotFound => Answer::new(S::NOT_FOUND, "not_found", "Not found."),
        DomainError::Validation(fields) => {
            Answer { fields: Some(fields), ..Answer::new(S::UNPROCESSABLE_ENTITY, "validation_failed", "Some fields are invalid.") }
        }
        DomainError::Unauthenticated => {
            Answer { www_authenticate: true, ..Answer::new(S::UNAUTHORIZED, "unauthenticated", "A valid bearer token is required.") }
        }
        DomainError::InvalidCredentials => Answer::new(S::UNAUTHORIZED, "invalid_credentials", "The email or password is wrong."),
        DomainError::Forbidden(m) => Answer::new(S::FORBIDDEN, "forbidden", sentence(m)),
        DomainError::OriginNotAllowed => {
            Answer::new(S::FORBIDDEN, "origin_not_allowed", "This page's origin is not among the site's domains.")
        }
        DomainError::Conflict(m) => Answer::new(S::CONFLICT, "conflict", sentence(m)),
        DomainError::InvalidCode => Answer::new(S::UNPROCESSABLE_ENTITY, "invalid_code", "The code is not right."),
        DomainError::ChallengeExpired => {
            Answer::new(S::GONE, "challenge_expired", "This verification has expired or was already used; start a new one.")
        }
        DomainError::CursorExpired => Answer::new(
            S::GONE,
            "cursor_expired",
            "This cursor is older than the events kept, or unknown; reload and follow from the new cursor.",
        ),
        DomainError::IdentityInvalid => Answer::new(
            S::UNAUTHORIZED,
            "identity_invalid",
            "The user_hash or identity token is not signed by this installation's identity secret, or has expired.",
        ),
        DomainError::IdentityRequired => Answer::new(
            S::UNAUTHORIZED,
            "identity_required",
            "This visitor must be identified by the page: send its user's signature (user_hash or jwt).",
        ),
        DomainError::RateLimited { retry_after_secs } => Answer {
            retry_after: Some(retry_after_secs.max(1)),
            ..Answer::new(S::TOO_MANY_REQUESTS, "rate_limited", "Too many requests; retry later.")
        },
        DomainError::TooLarge(max) => Answer::new(
            S::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("The file is larger than the {} this service takes.", parley_domain::attachments::names::bytes(max)),
        ),
        DomainError::QuotaExceeded => Answer::new(
            S::UNPROCESSABLE_ENTITY,
            "quota_exceeded",
            "This account's files take all the space it may use (PARLEY_FILES_QUOTA_PER_TENANT); no file can be added until it grows.",
        ),
        DomainError::UploadTimedOut => ApiError::RequestTimeout.answer(),
        DomainError::Unavailable(reason) => {
            tracing::error!(reason, "service unavailable");
            Answer::unavailable()
        }
        DomainError::NotSent(m) => Answer::new(S::SERVICE_UNAVAILABLE, "unavailable", sentence(m)),
        DomainError::Store(StoreError::Unavailable(detail)) => {
            tracing::error!(%detail, "database unavailable");
            Answer::unavailable()
        }
        DomainError::Store(StoreError::Duplicate(detail)) => {
            tracing::warn!(%detail, "duplicate record");
            Answer::new(S::CONFLICT, "conflict", "This conflicts with an existing record.")
        }
        DomainError::Store(StoreError::Internal(detail)) => {
            tracing::error!(%detail, "internal storage error");
            Answer::internal()
        }
    }
}

/// Domain messages are lower-case fragments; clients (and pages) get
/// sentences: capital first, full stop last.
pub(crate) fn sentence(text: &str) -> String {
    let mut chars = text.trim().chars();
    let mut out: String = chars.next().map(|c| c.to_uppercase().collect()).unwrap_or_default();
    out.push_str(chars.as_str());
    if !out.is_empty() && !out.ends_with('.') {
        out.push('.');
    }
    out
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let a = self.answer();
        let body = ErrorBody { error: ErrorDetail { code: a.code, message: a.message, fields: a.fields.map(|f| f.fields().clone()) } };
        let mut response = (a.status, Json(body)).into_response();
        if let Some(secs) = a.retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if a.www_authenticate {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}
