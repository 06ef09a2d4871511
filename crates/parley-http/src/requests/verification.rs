//! Verification requests.
#![allow(dead_code)]

use parley_domain::validate;
use parley_domain::verification::Method;
use utoipa::ToSchema;

use super::schema;
use crate::extract::{Fields, FromFields, Invalid};

/// Documented by hand in `routes::openapi` (`VerificationStartRequest`):
/// which target a method takes, and which methods this service offers.
#[derive(ToSchema)]
pub struct VerificationStartRequest {
    /// The installation token.
    token: schema::Token,
    /// `email_otp`, `sms_otp` or `magic_link`.
    method: String,
    /// Email address (email_otp, magic_link) or E.164 phone (sms_otp);
    /// defaults to the visitor's own.
    target: Option<String>,
}

/// A start before its conversation is known from the path.
pub struct Start {
    pub token: String,
    pub method: Method,
    pub target: Option<String>,
}

impl FromFields for Start {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let token = f.required("token", validate::token);
        let method = f.required("method", |s| Method::parse(s).ok_or_else(|| "must be one of email_otp, sms_otp, magic_link".to_owned()));
        let target = match &method {
            Ok(m) if m.uses_phone() => f.optional("target", validate::phone),
            Ok(_) => f.optional("target", validate::email),
            Err(_) => f.optional("target", |s| Ok(s.to_owned())),
        };
        Ok(Self { token: token?, method: method?, target: target? })
    }
}

#[derive(ToSchema)]
pub struct VerificationConfirmRequest {
    token: schema::Token,
    /// The `id` of the challenge from start.
    #[schema(schema_with = schema::challenge_id)]
    challenge_id: i64,
    /// The 6-digit code, or the code of the magic link.
    code: schema::Code,
}

pub struct Confirm {
    pub token: String,
    pub challenge_id: i64,
    pub code: String,
}

impl FromFields for Confirm {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let token = f.required("token", validate::token);
        let challenge_id = f.required_id("challenge_id");
        let code = f.required("code", validate::code);
        Ok(Self { token: token?, challenge_id: challenge_id?, code: code? })
    }
}
