//! Request extractors: everything that turns raw HTTP into domain input.

mod bearer;
mod caller;
mod fields;
mod json;
mod upload;

pub use bearer::{Authenticated, PathId, PathIds, bearer_token};
pub use caller::{ClientCaller, OwnOrigin, TrustedProxies, client_ip, try_page_path};
pub use fields::{Field, Fields, FromFields, Invalid, Item, Schema, Shape, positive_id};
pub use json::{JsonBody, OptionalJsonBody, QueryFields, RawBody};
pub use parley_macros::FromFields;
pub use upload::{FORM_OVERHEAD, FileUpload};
