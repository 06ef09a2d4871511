use super::{OperatorId, SiteId, TenantId};
use crate::clock::Timestamp;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Sees and administers everything of its tenant.
    Admin,
    /// Sees the conversations of the sites it is a member of.
    Agent,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Admin => "admin",
            Self::Agent => "agent",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "admin" => Some(Self::Admin),
            "agent" => Some(Self::Agent),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Operator {
    pub id: OperatorId,
    pub tenant_id: TenantId,
    pub email: String,
    pub name: String,
    pub role: Role,
    pub active: bool,
    pub site_ids: Vec<SiteId>,
    pub created_at: Timestamp,
}

#[derive(Clone, Debug)]
pub struct NewOperator {
    pub email: String,
    pub name: String,
    /// Argon2id PHC string; the password itself never reaches storage.
    pub password_hash: String,
    pub role: Role,
    pub site_ids: Vec<SiteId>,
    pub created_at: Timestamp,
}

#[derive(Clone, Debug)]
pub struct NewOperatorToken {
    pub operator_id: OperatorId,
    /// SHA-256 of the bearer token; the token itself is shown once.
    pub token_hash: Vec<u8>,
    pub device_name: Option<String>,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}
