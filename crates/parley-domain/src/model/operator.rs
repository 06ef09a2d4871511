use super::{OperatorId, SiteId, Tenant, TenantId, TokenId};
use crate::clock::Timestamp;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Sees and administers everything of its tenant.
    Admin,
    /// Sees the conversations of the sites it is a member of.
    Agent,
}

impl Role {
    pub const ALL: [Role; 2] = [Role::Admin, Role::Agent];

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
    /// False for an invited operator until it sets its password through
    /// its link: it cannot sign in before.
    pub password_set: bool,
    pub notify: NotifyChoices,
}

/// What an operator chooses to be pushed about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotifyChoices {
    /// New conversations, and visitor messages in unassigned ones.
    pub unassigned: bool,
    /// Visitor messages in conversations assigned to it, and assignments
    /// and transfers to it.
    pub mine: bool,
}

impl Default for NotifyChoices {
    fn default() -> Self {
        Self { unassigned: true, mine: true }
    }
}

/// One of an operator's sign-ins that still holds: a mobile login, a web
/// session or a personal token.
#[derive(Clone, Debug)]
pub struct SignInRecord {
    pub id: TokenId,
    pub kind: TokenKind,
    /// The device a mobile login named, or a personal token's name.
    pub name: Option<String>,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
}

/// A set-password link as stored: only its token's digest.
#[derive(Clone, Debug)]
pub struct NewPasswordLink {
    pub operator: OperatorId,
    pub token_hash: Vec<u8>,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}

#[derive(Clone, Debug)]
pub struct PasswordLink {
    pub tenant: TenantId,
    pub operator: OperatorId,
    pub expires_at: Timestamp,
    pub used_at: Option<Timestamp>,
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

/// What a stored operator token is. All three authenticate an operator
/// and end the same ways (revocation, disabling, a new password).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    /// A bearer token from a mobile login.
    Login,
    /// A web app session (the `parley_session` cookie).
    Session,
    /// A bearer token an admin made by name for testing the mobile API,
    /// listed and revocable on its own.
    Personal,
}

impl TokenKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Login => "login",
            Self::Session => "session",
            Self::Personal => "personal",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Login, Self::Session, Self::Personal].into_iter().find(|k| k.as_str() == s)
    }
}

#[derive(Clone, Debug)]
pub struct NewOperatorToken {
    pub operator_id: OperatorId,
    pub kind: TokenKind,
    /// SHA-256 of the bearer token; the token itself is shown once.
    pub token_hash: Vec<u8>,
    /// The device of a login, the name of a personal token.
    pub device_name: Option<String>,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}

/// A personal access token as its owner sees it: never the token itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersonalToken {
    pub id: TokenId,
    pub name: String,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    /// When it last authenticated a request, to the minute.
    pub last_used_at: Option<Timestamp>,
}

impl Operator {
    /// Whether this operator may see conversations of `site`.
    pub fn can_see_site(&self, site: SiteId) -> bool {
        self.role == Role::Admin || self.site_ids.contains(&site)
    }

    /// Whether it can answer `c`: active, and able to see its site.
    pub fn can_answer(&self, c: &super::Conversation) -> bool {
        self.active && self.can_see_site(c.site_id)
    }

    pub fn scope(&self) -> OperatorScope {
        OperatorScope { tenant: self.tenant_id, operator: self.id, role: self.role }
    }
}

/// What an operator's bearer token grants: the operator's own view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperatorScope {
    pub tenant: TenantId,
    pub operator: OperatorId,
    pub role: Role,
}

/// A signed-in operator: the token in use, its owner and tenant.
#[derive(Clone, Debug)]
pub struct Session {
    pub token_id: TokenId,
    /// What the token in use is: a personal token may not make tokens.
    pub kind: TokenKind,
    pub operator: Operator,
    pub tenant: Tenant,
    pub expires_at: Timestamp,
    /// When the token last authenticated a request, as last recorded.
    pub last_used_at: Option<Timestamp>,
    /// The address of the request the session authenticates, set by the
    /// HTTP layer: the audit log records it with each change.
    pub client: Option<std::net::IpAddr>,
}

/// Changes an admin makes to an operator; `None` leaves a field alone.
#[derive(Clone, Debug, Default)]
pub struct OperatorChanges {
    pub name: Option<String>,
    pub role: Option<Role>,
    pub active: Option<bool>,
    pub password_hash: Option<String>,
    pub site_ids: Option<Vec<SiteId>>,
    pub notify_unassigned: Option<bool>,
    pub notify_mine: Option<bool>,
}
