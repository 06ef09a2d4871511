//! Verification requests.

use parley_domain::model::ChallengeId;
use parley_domain::validate;
use parley_domain::verification::Method;
use utoipa::ToSchema;

use super::schema;
use super::values::Text;
use crate::extract::{Fields, FromFields, Invalid, Shape};

/// Read by hand, since which `target` is valid depends on `method`, and
/// documented by hand in `routes::openapi` (`VerificationStartRequest`):
/// which target a method takes, and which methods this service offers.
#[derive(ToSchema)]
pub struct VerificationStartRequest {
    /// The installation token.
    #[schema(value_type = schema::Token)]
    pub token: String,
    /// `email_otp`, `sms_otp` or `magic_link`.
    #[schema(value_type = String)]
    pub method: Method,
    /// Email address (email_otp, magic_link) or E.164 phone (sms_otp);
    /// defaults to the visitor's own.
    pub target: Option<String>,
}

impl FromFields for VerificationStartRequest {
    const FIELDS: &'static [(&'static str, Shape)] = &[("token", Shape::Text), ("method", Shape::Text), ("target", Shape::Text)];

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

#[derive(ToSchema, FromFields)]
pub struct VerificationConfirmRequest {
    pub token: schema::Token,
    /// The `id` of the challenge from start.
    #[schema(schema_with = schema::record_id)]
    pub challenge_id: ChallengeId,
    /// The 6-digit code, or the code of the magic link.
    pub code: schema::Code,
}

/// The query of a magic link's page: its code, compared as sent.
#[derive(FromFields)]
#[fields(query)]
pub struct LinkCode {
    /// The link's code
    pub code: Text,
}
