//! Verification answers.

use parley_domain::verification::service::{Started, Verified};
use serde::Serialize;
use utoipa::ToSchema;

use super::widget::WidgetConversationView;
use super::{DateTime, at};

#[derive(Serialize, ToSchema)]
pub struct ChallengeView {
    pub id: i64,
    #[schema(value_type = crate::views::names::MethodName)]
    pub method: &'static str,
    pub expires_at: DateTime,
    /// Where the code went, masked: `a***@example.com`, `+1*******123`.
    pub target_hint: String,
}

#[derive(Serialize, ToSchema)]
pub struct VerificationStartResponse {
    pub challenge: ChallengeView,
}

impl From<&Started> for VerificationStartResponse {
    fn from(s: &Started) -> Self {
        Self {
            challenge: ChallengeView {
                id: s.id.0,
                method: s.method.as_str(),
                expires_at: at(s.expires_at),
                target_hint: s.target_hint.clone(),
            },
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct VerificationView {
    #[schema(value_type = crate::views::names::VerificationStatusName)]
    pub status: &'static str,
    #[schema(value_type = crate::views::names::MethodName)]
    pub method: &'static str,
    pub verified_at: DateTime,
}

#[derive(Serialize, ToSchema)]
pub struct VerificationConfirmResponse {
    pub verification: VerificationView,
    pub conversation: WidgetConversationView,
}

impl From<&Verified> for VerificationConfirmResponse {
    fn from(v: &Verified) -> Self {
        Self {
            verification: VerificationView { status: "verified", method: v.method.as_str(), verified_at: at(v.verified_at) },
            conversation: (&v.conversation).into(),
        }
    }
}
