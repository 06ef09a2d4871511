//! The operator's own account: its name, what it is pushed about, its
//! password, and its sign-ins (mobile logins, web sessions, personal
//! tokens), each of which it can end. Every operator has one; none of it
//! is an admin change, so none of it is in the audit log.
//!
//! A personal token may read the account and change the name and the
//! choices, but not the password nor anyone's sign-ins: a token that
//! leaked must not lock its owner out or outlive its revocation.

use std::sync::Arc;

use crate::audit::{self, Action, Actor};
use crate::clock::{Clock, Timestamp};
use crate::error::{DomainError, FieldErrors};
use crate::limits::{Rate, SlidingWindow};
use crate::model::*;
use crate::password;
use crate::store::{Database, StoreResult, WriteTx};

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
    /// Wrong current passwords per operator.
    guesses: Arc<SlidingWindow<OperatorId>>,
}

/// Ends what lets the operator in, but `keep` (the sign-in that changed
/// its own password): its tokens and sessions with their devices, and
/// its set-password links. A new password, a disabled operator and a
/// password chosen through a link all end them the same way.
pub(crate) fn end_credentials(
    tx: &mut dyn WriteTx,
    tenant: TenantId,
    operator: OperatorId,
    keep: Option<TokenId>,
    now: Timestamp,
) -> StoreResult<()> {
    tx.spend_password_links(tenant, operator, now)?;
    match keep {
        Some(keep) => tx.revoke_other_tokens(tenant, operator, keep, now),
        None => tx.revoke_operator_tokens(tenant, operator, now),
    }
}

fn not_by_personal_token(session: &Session) -> Result<(), DomainError> {
    if session.kind == TokenKind::Personal {
        return Err(DomainError::Forbidden("a personal access token cannot change the password or end sign-ins"));
    }
    Ok(())
}

impl AccountService {
    /// `guesses`: wrong current passwords an operator may give
    /// (`RateLimitSettings::password_guesses`).
    pub fn new(db: Database, clock: Arc<dyn Clock>, guesses: Option<Rate>) -> Self {
        Self { db, clock, guesses: Arc::new(SlidingWindow::new(guesses)) }
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
                // Each choice is written on its own, so two changes at once
                // to different choices both stay.
                let changes = OperatorChanges {
                    name: patch.name,
                    notify_unassigned: patch.notify_unassigned,
                    notify_mine: patch.notify_mine,
                    ..OperatorChanges::default()
                };
                tx.update_operator(tenant, id, &changes)?;
                tx.operator(tenant, id)?.ok_or(DomainError::Unauthenticated)
            })
            .await
    }

    /// Changes the password once the current one is given; every other
    /// sign-in of the operator ends, this one stays. Wrong current
    /// passwords count per operator: a stolen session cannot guess at the
    /// speed of the machine.
    pub async fn change_password(&self, session: &Session, current: String, new: String) -> Result<(), DomainError> {
        not_by_personal_token(session)?;
        let (tenant, id, keep) = (session.tenant.id, session.operator.id, session.token_id);
        let started = self.clock.now();
        self.guesses.reserve(&id, started)?;
        let hash = self.db.read(move |r| Ok(r.password_hash(tenant, id)?)).await?.unwrap_or_default();
        if hash == crate::invitations::NO_PASSWORD || !password::verify(current, hash).await? {
            let mut errors = FieldErrors::new();
            errors.add("current_password", "is not your password");
            return Err(DomainError::Validation(errors));
        }
        self.guesses.forget(&id, started);
        let new_hash = password::hash(new).await?;
        let now = self.clock.now();
        self.db
            .write(move |tx| {
                let changes = OperatorChanges { password_hash: Some(new_hash), ..OperatorChanges::default() };
                tx.update_operator(tenant, id, &changes)?;
                Ok(end_credentials(tx, tenant, id, Some(keep), now)?)
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
        let (tenant, id, now, by) = (session.tenant.id, session.operator.id, self.clock.now(), Actor::of(session));
        let ended = self
            .db
            .write(move |tx| {
                let ended = tx.revoke_sign_in(tenant, id, token, now)?;
                // A personal token is an admin's tool: its end is recorded
                // whichever route ends it.
                if ended == Some(TokenKind::Personal) {
                    audit::record(tx, tenant, &by, now, Action::TokenRevoked, Some(token.0), serde_json::json!({}))?;
                }
                Ok(ended.is_some())
            })
            .await?;
        if ended { Ok(()) } else { Err(DomainError::NotFound) }
    }
}
