//! Personal access tokens: bearer tokens an admin makes by name, from the
//! integrations page or `admin/tokens`, to try the mobile API against
//! their own tenant. Each has an expiry, is shown once, is listed with
//! its last use and can be revoked alone; otherwise it is a login's
//! bearer token (`pat_`), ended by the same things.

use serde_json::json;

use crate::audit::{self, Action, Actor};
use std::time::Duration;

use super::AuthService;
use crate::admin::require_admin;
use crate::error::DomainError;
use crate::ids;
use crate::model::{PersonalToken, Session, TokenId, TokenKind};
use crate::tenancy::token_record;

/// Live personal tokens one operator may hold: enough for every device
/// and script of a test set-up, not a store of credentials.
pub const MAX_PERSONAL_TOKENS: usize = 50;

/// Longest lifetime of a personal token, in days.
pub const MAX_DAYS: u32 = 365;

pub struct NewPersonalToken {
    pub name: String,
    pub expires_in_days: u32,
}

impl AuthService {
    /// The signed-in admin's personal tokens, newest first.
    pub async fn personal_tokens(&self, session: &Session) -> Result<Vec<PersonalToken>, DomainError> {
        let tenant = require_admin(session)?;
        let operator = session.operator.id;
        self.db.read(move |r| Ok(r.personal_tokens(tenant, operator)?)).await
    }

    /// Makes a personal token for the signed-in admin: the token itself
    /// is in the answer, this once.
    pub async fn create_personal_token(&self, session: &Session, input: NewPersonalToken) -> Result<(PersonalToken, String), DomainError> {
        // A stolen token must not buy itself a longer life: a personal
        // token makes none (`require_admin` refuses it), and a login's
        // bearer token none that outlives it. A web app session is a
        // person signed in with a password in a browser, as on any site
        // that makes access tokens.
        let tenant = require_admin(session)?;
        if !(1..=MAX_DAYS).contains(&input.expires_in_days) {
            return Err(DomainError::invalid("expires_in_days", format!("must be from 1 to {MAX_DAYS}")));
        }
        let token = ids::operator_token()?;
        let now = self.clock.now();
        let mut ttl = Duration::from_secs(u64::from(input.expires_in_days) * 86_400);
        if session.kind == TokenKind::Login {
            ttl = ttl.min(session.expires_at.since(now));
        }
        let new = token_record(&token, TokenKind::Personal, &session.operator, Some(input.name.clone()), now, ttl);
        let (operator, expires_at, name) = (session.operator.id, new.expires_at, input.name.clone());
        let by = Actor::of(session);
        let id = self
            .db
            .write(move |tx| {
                // Counted inside the write, so parallel creations cannot
                // both slip under the bound.
                let held = tx.personal_tokens(tenant, operator)?;
                // Names tell an admin's tokens apart in the list; one sent
                // twice (a double click) makes one token, not two.
                if held.iter().any(|t| t.expires_at > now && t.name == name) {
                    return Err(DomainError::Conflict("a live token of yours already has this name; revoke it or choose another"));
                }
                let live = held.iter().filter(|t| t.expires_at > now).count();
                if live >= MAX_PERSONAL_TOKENS {
                    return Err(DomainError::Conflict("an operator holds at most 50 live personal tokens; revoke one first"));
                }
                let id = tx.insert_operator_token(tenant, &new)?;
                let details = json!({"name": name, "expires_at": expires_at.to_rfc3339()});
                audit::record(tx, tenant, &by, now, Action::TokenCreated, Some(id.0), details)?;
                Ok(id)
            })
            .await?;
        let made = PersonalToken { id, name: input.name, created_at: now, expires_at, last_used_at: None };
        Ok((made, token))
    }

    /// Revokes one of the signed-in admin's personal tokens; another
    /// operator's, or a login's, is not found.
    pub async fn revoke_personal_token(&self, session: &Session, id: TokenId) -> Result<(), DomainError> {
        let tenant = require_admin(session)?;
        let (operator, now, by) = (session.operator.id, self.clock.now(), Actor::of(session));
        let revoked = self
            .db
            .write(move |tx| {
                let revoked = tx.revoke_personal_token(tenant, operator, id, now)?;
                if revoked {
                    audit::record(tx, tenant, &by, now, Action::TokenRevoked, Some(id.0), json!({}))?;
                }
                Ok(revoked)
            })
            .await?;
        if revoked { Ok(()) } else { Err(DomainError::NotFound) }
    }
}
