//! Parley's domain layer.
//!
//! Everything here is independent of HTTP and of SQL: the HTTP layer turns
//! requests into the checked inputs of this crate, and the storage layer
//! implements the [`store`] interface. Rules that a careful reader would look
//! for ("who may see this conversation", "what happens when a visitor writes
//! to a closed conversation") live in this crate and nowhere else.

pub mod account;
mod activity;
pub mod admin;
pub mod attachments;
pub mod audit;
pub mod auth;
pub mod automation;
pub mod canned;
pub mod clock;
pub mod continuity;
pub mod devices;
pub mod erasure;
pub mod error;
pub mod events;
pub mod feed;
pub mod files;
pub mod health;
pub mod hours;
pub mod identity;
pub mod ids;
pub mod inbox;
pub mod invitations;
pub mod keys;
pub mod limits;
pub mod locale;
pub mod mask;
pub mod metrics;
pub mod model;
pub mod password;
pub mod push;
pub mod sandbox;
pub mod search;
pub mod store;
pub mod tenancy;
mod token_cache;
pub mod typing;
pub mod validate;
pub mod verification;
pub mod webhooks;
pub mod widget;

pub use clock::{Clock, ManualClock, SystemClock, Timestamp};
pub use error::{DomainError, FieldErrors};
pub use store::{Database, StoreError};
