//! JSON bodies and query strings, with the error answers of the contract:
//! 415 for another content type, 413 above 64 KiB, 400 for broken JSON,
//! 422 for well-formed JSON with bad fields.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use serde_json::Value;

use super::fields::{Fields, FromFields};
use crate::error::ApiError;

pub struct JsonBody<T>(pub T);

fn is_json(content_type: Option<&HeaderValue>) -> bool {
    let Some(ct) = content_type.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let mime = ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}

async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge
        } else if timed_out(&rejection) {
            ApiError::RequestTimeout
        } else {
            ApiError::MalformedJson("The request body could not be read.".into())
        }
    })
}

/// Whether the body stopped because the read deadline passed (the router's
/// body deadline layer), somewhere down the error's chain of causes.
pub(crate) fn timed_out(rejection: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(rejection);
    while let Some(e) = cause {
        if e.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        cause = e.source();
    }
    false
}

fn parse<T: FromFields>(bytes: &[u8]) -> Result<T, ApiError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| ApiError::MalformedJson(format!("The body is not valid JSON: {e}.")))?;
    let Value::Object(map) = value else {
        return Err(ApiError::MalformedJson("The body must be a JSON object.".into()));
    };
    let mut fields = Fields::new(&map);
    let parsed = T::from_fields(&mut fields);
    fields.finish(parsed)
}

impl<S: Send + Sync, T: FromFields> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(req.headers().get(header::CONTENT_TYPE)) {
            return Err(ApiError::UnsupportedMediaType);
        }
        let bytes = read_body(req, state).await?;
        parse(&bytes).map(JsonBody)
    }
}

/// A body that may be left out entirely (empty, with or without a content
/// type, or a JSON `null`); when present it must be a JSON object like any
/// other.
pub struct OptionalJsonBody<T>(pub Option<T>);

impl<S: Send + Sync, T: FromFields> FromRequest<S> for OptionalJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let json = is_json(req.headers().get(header::CONTENT_TYPE));
        let bytes = read_body(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(None));
        }
        if !json {
            return Err(ApiError::UnsupportedMediaType);
        }
        if serde_json::from_slice::<Value>(&bytes).is_ok_and(|v| v.is_null()) {
            return Ok(Self(None));
        }
        parse(&bytes).map(|t| Self(Some(t)))
    }
}

/// A body read as bytes, with the same answers for one that is too large
/// (413) or too slow (408) as every JSON body.
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        read_body(req, state).await.map(RawBody)
    }
}

/// Query parameters read with the same field rules as bodies.
pub struct QueryFields<T>(pub T);

impl<S: Send + Sync, T: FromFields> FromRequestParts<S> for QueryFields<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        let pairs: Vec<_> = url::form_urlencoded::parse(query.as_bytes()).collect();
        let mut fields = Fields::query(&pairs);
        let parsed = T::from_fields(&mut fields);
        fields.finish(parsed).map(QueryFields)
    }
}
