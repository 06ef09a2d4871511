//! Request extractors: everything that turns raw HTTP into domain input.

mod caller;
mod fields;
mod json;

pub use caller::{ClientCaller, TrustedProxies};
pub use fields::{Fields, FromFields, Invalid};
pub use json::{JsonBody, QueryFields};
