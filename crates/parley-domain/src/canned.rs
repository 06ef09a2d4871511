//! Canned responses: texts a team answers with often, each under a
//! shortcut an operator types after `/` in the reply box. They belong to
//! the tenant: every operator reads them, admins write them.

use std::sync::Arc;

use serde_json::json;

use crate::admin::require_admin;
use crate::audit::{self, Action, Actor};
use crate::clock::{Clock, Timestamp};
use crate::error::DomainError;
use crate::model::{CannedId, Session};
use crate::store::Database;

/// Responses a tenant may keep: the reply box offers them all, so a list
/// that grew without bound would slow every conversation page.
pub const MAX_PER_TENANT: usize = 500;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CannedResponse {
    pub id: CannedId,
    /// Lower case, unique in the tenant (see `validate::SHORTCUT`).
    pub shortcut: String,
    pub body: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A response's text, checked by `validate::shortcut` and
/// `validate::message_body`.
#[derive(Clone, Debug)]
pub struct CannedText {
    pub shortcut: String,
    pub body: String,
}

/// What changes of a response; what is left out stays.
#[derive(Clone, Debug, Default)]
pub struct CannedPatch {
    pub shortcut: Option<String>,
    pub body: Option<String>,
}

#[derive(Clone)]
pub struct CannedService {
    db: Database,
    clock: Arc<dyn Clock>,
}

impl CannedService {
    pub fn new(db: Database, clock: Arc<dyn Clock>) -> Self {
        Self { db, clock }
    }

    /// The tenant's responses by shortcut, for any operator (a personal
    /// token included: the mobile app offers them too).
    pub async fn list(&self, session: &Session) -> Result<Vec<CannedResponse>, DomainError> {
        let tenant = session.tenant.id;
        self.db.read(move |r| Ok(r.canned_responses(tenant)?)).await
    }

    pub async fn create(&self, session: &Session, text: CannedText) -> Result<CannedResponse, DomainError> {
        let tenant = require_admin(session)?;
        let (by, now) = (Actor::of(session), self.clock.now());
        self.db
            .write(move |tx| {
                // The tenant's responses change one unit at a time, so the
                // bound and the shortcut's uniqueness hold under races.
                let existing = tx.lock_canned_responses(tenant)?;
                if existing.iter().any(|c| c.shortcut == text.shortcut) {
                    return Err(DomainError::Conflict("another canned response has this shortcut"));
                }
                if existing.len() >= MAX_PER_TENANT {
                    return Err(DomainError::Conflict("this tenant has the most canned responses allowed (500); delete one first"));
                }
                let made = tx.insert_canned_response(tenant, &text, now)?;
                audit::record(tx, tenant, &by, now, Action::CannedCreated, Some(made.id.0), json!({"shortcut": made.shortcut}))?;
                Ok(made)
            })
            .await
    }

    pub async fn update(&self, session: &Session, id: CannedId, patch: CannedPatch) -> Result<CannedResponse, DomainError> {
        let tenant = require_admin(session)?;
        let (by, now) = (Actor::of(session), self.clock.now());
        self.db
            .write(move |tx| {
                let existing = tx.lock_canned_responses(tenant)?;
                let current = existing.iter().find(|c| c.id == id).ok_or(DomainError::NotFound)?;
                let text = CannedText {
                    shortcut: patch.shortcut.unwrap_or_else(|| current.shortcut.clone()),
                    body: patch.body.unwrap_or_else(|| current.body.clone()),
                };
                if existing.iter().any(|c| c.id != id && c.shortcut == text.shortcut) {
                    return Err(DomainError::Conflict("another canned response has this shortcut"));
                }
                tx.update_canned_response(tenant, id, &text, now)?;
                let details = json!({"shortcut": text.shortcut, "body_changed": text.body != current.body});
                audit::record(tx, tenant, &by, now, Action::CannedUpdated, Some(id.0), details)?;
                Ok(CannedResponse { shortcut: text.shortcut, body: text.body, updated_at: now, ..current.clone() })
            })
            .await
    }

    pub async fn delete(&self, session: &Session, id: CannedId) -> Result<(), DomainError> {
        let tenant = require_admin(session)?;
        let (by, now) = (Actor::of(session), self.clock.now());
        let deleted = self
            .db
            .write(move |tx| {
                let deleted = tx.delete_canned_response(tenant, id)?;
                if let Some(shortcut) = &deleted {
                    audit::record(tx, tenant, &by, now, Action::CannedDeleted, Some(id.0), json!({"shortcut": shortcut}))?;
                }
                Ok(deleted.is_some())
            })
            .await?;
        if deleted { Ok(()) } else { Err(DomainError::NotFound) }
    }
}
