//! Ids of a page's path. Anything that is not one is the same "not found"
//! page as an id of another tenant: pages answer pages, never the API's
//! JSON rejection.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::error::PageError;
use crate::extract::{PathId, PathIds};

/// The id of the path.
pub struct Id(pub i64);

impl<S: Send + Sync> FromRequestParts<S> for Id {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, PageError> {
        let PathId(id) = PathId::from_request_parts(parts, state).await?;
        Ok(Self(id))
    }
}

/// Two ids of the path (an endpoint and one of its deliveries).
pub struct Ids(pub i64, pub i64);

impl<S: Send + Sync> FromRequestParts<S> for Ids {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, PageError> {
        let PathIds(a, b) = PathIds::from_request_parts(parts, state).await?;
        Ok(Self(a, b))
    }
}
