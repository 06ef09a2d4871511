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
    UnsupportedMediaType,
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

impl ApiError {
    fn parts(
        self,
    ) -> (
        StatusCode,
        &'static str,
        String,
        Option<FieldErrors>,
        Option<u64>,
    ) {
        use StatusCode as S;
        match self {
            Self::MalformedJson(m) => (S::BAD_REQUEST, "malformed_json", m, None, None),
            Self::PayloadTooLarge => (
                S::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "The request body is larger than 64 KiB.".into(),
                None,
                None,
            ),
            Self::UnsupportedMediaType => (
                S::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "Send the body as JSON with content-type: application/json.".into(),
                None,
                None,
            ),
            Self::MethodNotAllowed => (
                S::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "This method is not allowed on this path.".into(),
                None,
                None,
            ),
            Self::RouteNotFound => (
                S::NOT_FOUND,
                "not_found",
                "No such route.".into(),
                None,
                None,
            ),
            Self::Internal => (
                S::INTERNAL_SERVER_ERROR,
                "internal",
                "Something went wrong on our side.".into(),
                None,
                None,
            ),
            Self::Domain(e) => match e {
                DomainError::NotFound => {
                    (S::NOT_FOUND, "not_found", "Not found.".into(), None, None)
                }
                DomainError::Validation(fields) => (
                    S::UNPROCESSABLE_ENTITY,
                    "validation_failed",
                    "Some fields are invalid.".into(),
                    Some(fields),
                    None,
                ),
                DomainError::Forbidden(m) => (S::FORBIDDEN, "forbidden", capitalise(m), None, None),
                DomainError::OriginNotAllowed => (
                    S::FORBIDDEN,
                    "origin_not_allowed",
                    "This page's origin is not among the site's domains.".into(),
                    None,
                    None,
                ),
                DomainError::Conflict(m) => (S::CONFLICT, "conflict", capitalise(m), None, None),
                DomainError::RateLimited { retry_after_secs } => (
                    S::TOO_MANY_REQUESTS,
                    "rate_limited",
                    "Too many requests; retry later.".into(),
                    None,
                    Some(retry_after_secs.max(1)),
                ),
                DomainError::Unavailable(m) => {
                    tracing::error!(reason = m, "service unavailable");
                    (
                        S::SERVICE_UNAVAILABLE,
                        "unavailable",
                        "The service is temporarily unavailable.".into(),
                        None,
                        None,
                    )
                }
                DomainError::Store(e) => store_parts(e),
            },
        }
    }
}

fn store_parts(
    e: StoreError,
) -> (
    StatusCode,
    &'static str,
    String,
    Option<FieldErrors>,
    Option<u64>,
) {
    match e {
        StoreError::Unavailable(detail) => {
            tracing::error!(%detail, "database unavailable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "The service is temporarily unavailable.".into(),
                None,
                None,
            )
        }
        StoreError::Duplicate(detail) => {
            tracing::warn!(%detail, "duplicate record");
            (
                StatusCode::CONFLICT,
                "conflict",
                "This conflicts with an existing record.".into(),
                None,
                None,
            )
        }
        StoreError::Internal(detail) => {
            tracing::error!(%detail, "internal storage error");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "Something went wrong on our side.".into(),
                None,
                None,
            )
        }
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => format!("{}{}.", first.to_uppercase(), c.as_str()),
        None => String::new(),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code, message, fields, retry_after) = self.parts();
        let body = ErrorBody {
            error: ErrorDetail {
                code,
                message,
                fields: fields.map(|f| f.fields().clone()),
            },
        };
        let mut response = (status, Json(body)).into_response();
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}
