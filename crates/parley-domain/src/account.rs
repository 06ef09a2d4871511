//! The operator's own account: its name, what it is pushed about, its
//! password, and its sign-ins (mobile logins, web sessions, personal
//! tokens), each of which it can end. Every operator has one; none of it
//! is an admin change, so none of it is in the audit log.
//!
//! A personal token may read the account and change the name and the
//! choices, but not the password nor anyone's sign-ins: a token that
//! leaked must not lock its owner out or outlive its revocation.

use std::sync::Arc;

use crate::clock::Clock;
use crate::error::{DomainError, FieldErrors};
use crate::model::*;
use crate::password;
use crate::store::Database;

/// What changes of the account; what is left out stays.
#[derive(Clone, Debug, Default)]
pub struct AccountPatch {
    pub name: Option<String>,
    pub notify_unassigned: Option<bool>,
    pub notify_mine: Option<bool>,
}

#[derive(Clone)]
pub struct AccountService {
    db: Database,
    clock: Arc<dyn Clock>,
}

fn not_by_personal_token(session: &Session) -> Result<(), DomainError> {
    if session.kind == TokenKind::Personal {
        return Err(DomainError::Forbidden("a personal access token cannot change the password or end sign-ins"));
    }
    Ok(())
}

impl AccountService {
    pub fn new(db: Database, clock: Arc<dyn Clock>) -> Self {
        Self { db, clock }
    }

    /// The operator as it is now (the session's copy may be older).
    pub async fn me(&self, session: &Session) -> Result<Operator, DomainError> {
        let (tenant, id) = (session.tenant.id, session.operator.id);
        self.db.read(move |r| r.operator(tenant, id)?.ok_or(DomainError::Unauthenticated)).await
    }

    pub async fn update(&self, session: &Session, patch: AccountPatch) -> Result<Operator, DomainError> {
        let (tenant, id) = (session.tenant.id, session.operator.id);
        self.db
            .write(move |tx| {
                let current = tx.operator(tenant, id)?.ok_or(DomainError::Unauthenticated)?;
                let notify = NotifyChoices {
                    unassigned: patch.notify_unassigned.unwrap_or(current.notify.unassigned),
                    mine: patch.notify_mine.unwrap_or(current.notify.mine),
                };
                let changes = OperatorChanges { name: patch.name, notify: Some(notify), ..OperatorChanges::default() };
                tx.update_operator(tenant, id, &changes)?;
                tx.operator(tenant, id)?.ok_or(DomainError::Unauthenticated)
            })
            .await
    }

    /// Changes the password once the current one is given; every other
    /// sign-in of the operator ends, this one stays.
    pub async fn change_password(&self, session: &Session, current: String, new: String) -> Result<(), DomainError> {
        not_by_personal_token(session)?;
        let email = session.operator.email.clone();
        let found = self.db.read(move |r| Ok(r.login_operator(&email)?)).await?;
        let hash = found.map(|(_, hash)| hash).filter(|h| !h.is_empty()).ok_or(DomainError::Unauthenticated)?;
        let checked = tokio::task::spawn_blocking(move || {
            if !password::verify_password(&current, &hash) {
                return Ok(None);
            }
            password::hash_password(&new).map(Some)
        })
        .await
        .map_err(|_| DomainError::Unavailable("password check failed"))??;
        let Some(new_hash) = checked else {
            let mut errors = FieldErrors::new();
            errors.add("current_password", "is not your password");
            return Err(DomainError::Validation(errors));
        };
        let (tenant, id, keep, now) = (session.tenant.id, session.operator.id, session.token_id, self.clock.now());
        self.db
            .write(move |tx| {
                let changes = OperatorChanges { password_hash: Some(new_hash), ..OperatorChanges::default() };
                tx.update_operator(tenant, id, &changes)?;
                tx.spend_password_links(tenant, id, now)?;
                Ok(tx.revoke_other_tokens(tenant, id, keep, now)?)
            })
            .await
    }

    /// The operator's sign-ins that still hold, latest used first.
    pub async fn sign_ins(&self, session: &Session) -> Result<Vec<SignInRecord>, DomainError> {
        let (tenant, id, now) = (session.tenant.id, session.operator.id, self.clock.now());
        self.db.read(move |r| Ok(r.sign_ins(tenant, id, now)?)).await
    }

    /// Ends one of the operator's own sign-ins (this one too: that signs
    /// out); another operator's is not found.
    pub async fn end_sign_in(&self, session: &Session, token: TokenId) -> Result<(), DomainError> {
        not_by_personal_token(session)?;
        let (tenant, id, now) = (session.tenant.id, session.operator.id, self.clock.now());
        let ended = self.db.write(move |tx| Ok(tx.revoke_sign_in(tenant, id, token, now)?)).await?;
        if ended { Ok(()) } else { Err(DomainError::NotFound) }
    }
}
