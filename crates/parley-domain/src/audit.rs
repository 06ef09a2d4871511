//! The audit log: every change an admin makes to the tenant (and every
//! erasure, retention's too) is recorded with who made it, from which
//! address and when, in the same write unit as the change itself, so a
//! change is never without its entry nor an entry without its change.
//!
//! Entries name what changed, never a secret or a message: an erasure's
//! entry outlives the conversation it names.

use std::net::IpAddr;

use serde_json::Value;

use crate::admin::require_admin;
use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::inbox::{PageMeta, PageRequest};
use crate::model::{AuditId, OperatorId, Session, TenantId};
use crate::store::{Database, StoreResult, WriteTx};

/// Declares the actions once: their names (the API's `action` values)
/// and the kind of record each one's target is.
macro_rules! actions {
    ($($(#[$doc:meta])* $variant:ident = $name:literal on $target:literal),* $(,)?) => {
        /// What an admin did.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Action { $($(#[$doc])* $variant),* }

        impl Action {
            pub const ALL: &[Action] = &[$(Action::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self { $(Action::$variant => $name),* }
            }

            pub fn parse(s: &str) -> Option<Self> {
                match s { $($name => Some(Action::$variant),)* _ => None }
            }

            /// The kind of record the entry's `target_id` names.
            pub fn target(self) -> &'static str {
                match self { $(Action::$variant => $target),* }
            }
        }
    };
}

actions! {
    SiteCreated = "site.created" on "site",
    SiteUpdated = "site.updated" on "site",
    InstallationCreated = "installation.created" on "installation",
    InstallationUpdated = "installation.updated" on "installation",
    IdentitySecretRotated = "installation.identity_secret_rotated" on "installation",
    OperatorCreated = "operator.created" on "operator",
    /// An operator invited by email, who sets their own password.
    OperatorInvited = "operator.invited" on "operator",
    OperatorUpdated = "operator.updated" on "operator",
    /// A link to choose a new password, emailed to an operator.
    PasswordLinkSent = "operator.password_link_sent" on "operator",
    WebhookCreated = "webhook.created" on "webhook",
    WebhookDeleted = "webhook.deleted" on "webhook",
    WebhookSecretRotated = "webhook.secret_rotated" on "webhook",
    WebhookRedelivered = "webhook.redelivered" on "delivery",
    WebhookTested = "webhook.tested" on "delivery",
    TokenCreated = "token.created" on "token",
    TokenRevoked = "token.revoked" on "token",
    CannedCreated = "canned_response.created" on "canned_response",
    CannedUpdated = "canned_response.updated" on "canned_response",
    CannedDeleted = "canned_response.deleted" on "canned_response",
    ConversationErased = "conversation.erased" on "conversation",
}

/// Who made a change: an operator with the address its request came
/// from, or the service itself (retention).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Actor {
    pub operator: Option<OperatorId>,
    /// The operator's email then, or `retention`: an entry still says who
    /// once the operator's address changed.
    pub name: String,
    pub address: Option<IpAddr>,
}

impl Actor {
    pub fn of(session: &Session) -> Self {
        Self { operator: Some(session.operator.id), name: session.operator.email.clone(), address: session.client }
    }

    /// The retention sweep, erasing on the tenant's behalf.
    pub fn retention() -> Self {
        Self { operator: None, name: "retention".into(), address: None }
    }
}

/// One entry, as stored and shown.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditEntry {
    pub id: AuditId,
    pub actor: Actor,
    pub action: Action,
    pub target_id: Option<i64>,
    /// What changed, by field: new values, never secrets (a password or a
    /// secret is only said to have changed).
    pub details: Value,
    pub created_at: Timestamp,
}

/// An entry to record.
#[derive(Clone, Debug)]
pub struct NewAuditEntry<'a> {
    pub actor: &'a Actor,
    pub action: Action,
    pub target_id: Option<i64>,
    pub details: &'a Value,
    pub created_at: Timestamp,
}

/// Records `action` in the unit `tx` that makes the change.
pub fn record(
    tx: &mut dyn WriteTx,
    tenant: TenantId,
    actor: &Actor,
    at: Timestamp,
    action: Action,
    target_id: Option<i64>,
    details: Value,
) -> StoreResult<()> {
    tx.insert_audit_entry(tenant, &NewAuditEntry { actor, action, target_id, details: &details, created_at: at })
}

/// The most a page of the log holds.
pub const MAX_PER_PAGE: u32 = 100;

#[derive(Clone)]
pub struct AuditService {
    db: Database,
}

impl AuditService {
    pub fn new(db: Database) -> Self {
        Self { db }
    }

    /// The tenant's log, newest first; admins only.
    pub async fn entries(&self, session: &Session, page: PageRequest) -> Result<(Vec<AuditEntry>, PageMeta), DomainError> {
        let tenant = require_admin(session)?;
        self.db
            .read(move |r| {
                let total = r.count_audit_entries(tenant)?;
                let offset = u64::from(page.page.saturating_sub(1)) * u64::from(page.per_page);
                let entries = r.audit_entries(tenant, page.per_page, offset)?;
                Ok((entries, PageMeta::new(page, total)))
            })
            .await
    }
}
