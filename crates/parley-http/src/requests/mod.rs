//! Request bodies and queries.
//!
//! Each request has a schema type (what the OpenAPI document shows) and a
//! [`FromFields`](crate::extract::FromFields) reading into the domain's
//! checked input. The schema types are never built at run time: the
//! readers are the source of truth, and the integration tests check that
//! each documented required field is enforced.

pub mod admin;
pub mod mobile;
pub mod schema;
pub mod verification;
pub mod widget;
