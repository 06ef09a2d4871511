//! Secure visitor verification: a code or link sent to the visitor's email
//! or phone proves the visitor controls it.
//!
//! A challenge lives 10 minutes, is single use, and is spent after 5 wrong
//! codes; a new start supersedes the conversation's previous challenge.
//! Codes come from the operating system's CSPRNG and are stored only as
//! salted SHA-256 digests, compared in constant time. Starts are limited
//! per conversation, client address and tenant, and SMS also per number and
//! by a daily budget per tenant, all checked before anything is sent.

pub mod channels;
pub mod codes;
pub mod limits;
pub mod messages;
pub mod service;
pub mod setup;

use std::time::Duration;

use crate::clock::Timestamp;
use crate::model::{ChallengeId, ConversationId, SiteScope, VisitorId};

/// How long a challenge can be confirmed.
pub const CHALLENGE_TTL: Duration = Duration::from_secs(10 * 60);
/// Wrong codes that spend a challenge.
pub const MAX_ATTEMPTS: u32 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    EmailOtp,
    SmsOtp,
    MagicLink,
}

impl Method {
    pub const ALL: [Method; 3] = [Method::EmailOtp, Method::SmsOtp, Method::MagicLink];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::EmailOtp => "email_otp",
            Self::SmsOtp => "sms_otp",
            Self::MagicLink => "magic_link",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }

    /// Whether the method sends to a phone (else to an email address).
    pub fn uses_phone(self) -> bool {
        self == Self::SmsOtp
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChallengeStatus {
    Active,
    Verified,
    /// A newer start replaced it.
    Superseded,
    /// Too many wrong codes.
    Spent,
    /// Its message could not be sent.
    Failed,
}

impl ChallengeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Verified => "verified",
            Self::Superseded => "superseded",
            Self::Spent => "spent",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "active" => Self::Active,
            "verified" => Self::Verified,
            "superseded" => Self::Superseded,
            "spent" => Self::Spent,
            "failed" => Self::Failed,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug)]
pub struct Challenge {
    pub id: ChallengeId,
    pub scope: SiteScope,
    pub conversation_id: ConversationId,
    pub visitor_id: VisitorId,
    pub method: Method,
    pub target: String,
    pub code_salt: Vec<u8>,
    pub code_hash: Vec<u8>,
    pub status: ChallengeStatus,
    pub attempts: u32,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}

#[derive(Clone, Debug)]
pub struct NewChallenge {
    pub conversation_id: ConversationId,
    pub visitor_id: VisitorId,
    pub method: Method,
    pub target: String,
    pub code_salt: Vec<u8>,
    pub code_hash: Vec<u8>,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}

/// Which recent challenges a limit counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChallengeCount {
    Conversation(ConversationId),
    Tenant,
    /// SMS challenges of the tenant.
    TenantSms,
    /// SMS challenges to one number, in any tenant.
    Phone(String),
    /// Email challenges (codes and links) to one address, in any tenant.
    Email(String),
}

/// Which recent test messages a limit counts (see `setup`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TestCount {
    /// The tenant's, through either channel.
    Tenant,
    /// To one recipient (a phone number, or an email address's matching
    /// form), from any tenant.
    Recipient(String),
}
