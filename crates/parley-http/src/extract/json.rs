//! JSON bodies and query strings, with the error answers of the contract:
//! 415 for another content type, 413 above 64 KiB, 400 for broken JSON,
//! 422 for well-formed JSON with bad fields.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde_json::{Map, Value};

use super::fields::{Fields, FromFields};
use crate::error::ApiError;

pub struct JsonBody<T>(pub T);

fn is_json(parts_ct: Option<&axum::http::HeaderValue>) -> bool {
    let Some(ct) = parts_ct.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let mime = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}

impl<S: Send + Sync, T: FromFields> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(req.headers().get(header::CONTENT_TYPE)) {
            return Err(ApiError::UnsupportedMediaType);
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge
            } else {
                ApiError::MalformedJson("The request body could not be read.".into())
            }
        })?;
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::MalformedJson(format!("The body is not valid JSON: {e}.")))?;
        let Value::Object(map) = value else {
            return Err(ApiError::MalformedJson(
                "The body must be a JSON object.".into(),
            ));
        };
        let mut fields = Fields::new(&map);
        let parsed = T::from_fields(&mut fields);
        fields.finish(parsed).map(JsonBody)
    }
}

/// Query parameters read with the same field rules as bodies.
pub struct QueryFields<T>(pub T);

impl<S: Send + Sync, T: FromFields> FromRequestParts<S> for QueryFields<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        let map: Map<String, Value> = url::form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
            .collect();
        let mut fields = Fields::new(&map);
        let parsed = T::from_fields(&mut fields);
        fields.finish(parsed).map(QueryFields)
    }
}
