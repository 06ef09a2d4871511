//! Response bodies: which fields of the domain's records a client sees.

pub mod admin;
pub mod mobile;
pub mod names;
pub mod stream;
pub mod verification;
pub mod widget;

pub use widget::{DateTime, at};
