//! Set-password links: how an admin invites an operator by email (the
//! operator chooses its own password; nobody else ever knows it) and how
//! an admin sends an operator a link to choose a new one.
//!
//! A link is a 256-bit token in a URL, kept as its SHA-256 only; it works
//! once, for [`LINK_LIFETIME`]. A newer link spends the operator's older
//! ones, and setting the password spends them all and signs the operator
//! out everywhere. The email goes out after the unit that made the link
//! commits: when it cannot be sent, the answer says so and the admin
//! sends another link, which spends the unsent one.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::admin::{check_sites, email_taken, require_admin};
use crate::audit::{self, Action, Actor};
use crate::clock::{Clock, Timestamp};
use crate::error::DomainError;
use crate::limits::{Rate, SlidingWindow};
use crate::model::*;
use crate::store::{Database, ReadTx};
use crate::verification::channels::{Email, EmailSender};
use crate::verification::messages::escape;
use crate::{ids, password};

pub const LINK_LIFETIME: Duration = Duration::from_secs(72 * 3600);
/// What a link's token starts with: never a bearer token or a session.
pub const TOKEN_PREFIX: &str = "pwl_";
/// What an invited operator's password hash is until it chooses one: no
/// password verifies against it.
pub const NO_PASSWORD: &str = "";

/// An operator to invite: it chooses its password through the link.
#[derive(Clone, Debug)]
pub struct InviteInput {
    pub email: String,
    pub name: String,
    pub role: Role,
    pub site_ids: Vec<SiteId>,
}

/// A link made for an operator.
#[derive(Clone, Debug)]
pub struct LinkSent {
    pub expires_at: Timestamp,
    /// Whether the email left; false when no channel took it.
    pub sent: bool,
}

/// Whom a live link is for, as its page greets them.
#[derive(Clone, Debug)]
pub struct LinkHolder {
    pub name: String,
    pub email: String,
    pub tenant_name: String,
}

#[derive(Clone)]
pub struct InvitationService {
    db: Database,
    clock: Arc<dyn Clock>,
    mailer: Option<Arc<dyn EmailSender>>,
    public_url: String,
    /// Emails sent per tenant (`RateLimitSettings::password_links_per_tenant`).
    sends: Arc<SlidingWindow<TenantId>>,
}

impl InvitationService {
    pub fn new(db: Database, clock: Arc<dyn Clock>, mailer: Option<Arc<dyn EmailSender>>, public_url: String, sends: Option<Rate>) -> Self {
        Self { db, clock, mailer, public_url, sends: Arc::new(SlidingWindow::new(sends)) }
    }

    /// Makes the operator without a password, and emails it a link to
    /// choose one.
    pub async fn invite(&self, session: &Session, input: InviteInput) -> Result<(Operator, LinkSent), DomainError> {
        let Fresh { tenant, by, now, token, digest, expires_at } = self.fresh(session)?;
        let operator = self
            .db
            .write(move |tx| {
                check_sites(&tx.sites(tenant)?, &input.site_ids)?;
                let new = NewOperator {
                    email: input.email,
                    name: input.name,
                    password_hash: NO_PASSWORD.to_owned(),
                    role: input.role,
                    site_ids: input.site_ids,
                    created_at: now,
                };
                let made = tx.insert_operator(tenant, &new).map_err(|e| email_taken(e.into()))?;
                tx.insert_password_link(tenant, &NewPasswordLink { operator: made.id, token_hash: digest, created_at: now, expires_at })?;
                let details = json!({"email": made.email, "name": made.name, "role": made.role.as_str(), "site_ids": new.site_ids});
                audit::record(tx, tenant, &by, now, Action::OperatorInvited, Some(made.id.0), details)?;
                Ok(made)
            })
            .await?;
        let sent = self.send(tenant, invitation_email(&operator, &session.tenant.name, &session.operator.name, &self.link(&token))).await;
        Ok((operator, LinkSent { expires_at, sent }))
    }

    /// Emails the operator a new link (an invitation not yet taken up is
    /// sent again this way); its older links stop working. Its password
    /// stays until it sets another.
    pub async fn send_link(&self, session: &Session, id: OperatorId) -> Result<LinkSent, DomainError> {
        let Fresh { tenant, by, now, token, digest, expires_at } = self.fresh(session)?;
        let operator = self
            .db
            .write(move |tx| {
                let operator = tx.operator(tenant, id)?.ok_or(DomainError::NotFound)?;
                if !operator.active {
                    return Err(DomainError::Conflict("the operator is disabled; enable it first"));
                }
                tx.spend_password_links(tenant, id, now)?;
                tx.insert_password_link(tenant, &NewPasswordLink { operator: id, token_hash: digest, created_at: now, expires_at })?;
                let action = if operator.password_set { Action::PasswordLinkSent } else { Action::OperatorInvited };
                audit::record(tx, tenant, &by, now, action, Some(id.0), json!({"email": operator.email}))?;
                Ok(operator)
            })
            .await?;
        let link = self.link(&token);
        let email = if operator.password_set {
            reset_email(&operator, &session.tenant.name, &link)
        } else {
            invitation_email(&operator, &session.tenant.name, &session.operator.name, &link)
        };
        let sent = self.send(tenant, email).await;
        Ok(LinkSent { expires_at, sent })
    }

    /// Whom a link is for, while it works.
    pub async fn holder(&self, token: &str) -> Result<LinkHolder, DomainError> {
        let (digest, now) = (digest_of(token)?, self.clock.now());
        self.db
            .read(move |r| {
                let (link, operator) = live(r, &digest, now)?;
                let tenant = r.tenant(link.tenant)?.ok_or(DomainError::NotFound)?;
                Ok(LinkHolder { name: operator.name, email: operator.email, tenant_name: tenant.name })
            })
            .await
    }

    /// Sets the password the link's holder chose and ends everything that
    /// let it in before (tokens, sessions, other links); returns the
    /// operator, to sign in. The link is looked at before the password is
    /// hashed, so a made-up link costs no Argon2id work, and again in the
    /// unit that sets it, so it is spent once.
    pub async fn set_password(&self, token: &str, new_password: String) -> Result<Operator, DomainError> {
        let digest = digest_of(token)?;
        let looked = digest.clone();
        let now = self.clock.now();
        self.db.read(move |r| live(r, &looked, now).map(drop)).await?;
        let hash = password::hash(new_password).await?;
        let now = self.clock.now();
        self.db
            .write(move |tx| {
                let (link, operator) = live(tx, &digest, now)?;
                let changes = OperatorChanges { password_hash: Some(hash), ..OperatorChanges::default() };
                tx.update_operator(link.tenant, operator.id, &changes)?;
                crate::account::end_credentials(tx, link.tenant, operator.id, None, now)?;
                Ok(Operator { password_set: true, ..operator })
            })
            .await
    }

    /// What an admin's request for a link starts from: its tenant, who
    /// asks, the time, and a new token with its digest and expiry. The
    /// email it will cost is counted here, before any work.
    fn fresh(&self, session: &Session) -> Result<Fresh, DomainError> {
        let tenant = require_admin(session)?;
        let now = self.clock.now();
        self.sends.reserve(&tenant, now)?;
        let token = ids::prefixed::<32>(TOKEN_PREFIX)?;
        let digest = password::token_digest(&token);
        Ok(Fresh { tenant, by: Actor::of(session), now, token, digest, expires_at: now.plus(LINK_LIFETIME) })
    }

    fn link(&self, token: &str) -> String {
        format!("{}/app/password?token={token}", self.public_url)
    }

    async fn send(&self, tenant: TenantId, email: Email) -> bool {
        let Some(mailer) = &self.mailer else { return false };
        match mailer.send(tenant, email).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(tenant = tenant.0, error = %e, "a set-password link could not be emailed");
                false
            }
        }
    }
}

/// A link about to be made (`InvitationService::fresh`).
struct Fresh {
    tenant: TenantId,
    by: Actor,
    now: Timestamp,
    token: String,
    digest: Vec<u8>,
    expires_at: Timestamp,
}

/// A token of the right shape's digest; anything else names no link.
fn digest_of(token: &str) -> Result<Vec<u8>, DomainError> {
    if !token.starts_with(TOKEN_PREFIX) || token.len() > 128 {
        return Err(DomainError::NotFound);
    }
    Ok(password::token_digest(token))
}

/// The link and its operator, if the link still works: unused, not
/// expired, its operator active. Anything else is the same 404.
fn live(r: &mut dyn ReadTx, digest: &[u8], now: Timestamp) -> Result<(PasswordLink, Operator), DomainError> {
    let link = r.password_link(digest)?.ok_or(DomainError::NotFound)?;
    if link.used_at.is_some() || link.expires_at <= now {
        return Err(DomainError::NotFound);
    }
    let operator = r.operator(link.tenant, link.operator)?.filter(|o| o.active).ok_or(DomainError::NotFound)?;
    Ok((link, operator))
}

/// [`LINK_LIFETIME`] as the emails and pages say it: in hours, which
/// it is a whole number of (checked as the crate builds).
pub fn lifetime_in_words() -> String {
    const _: () = assert!(LINK_LIFETIME.as_secs().is_multiple_of(3600) && LINK_LIFETIME.as_secs() > 3600);
    format!("{} hours", LINK_LIFETIME.as_secs() / 3600)
}

fn invitation_email(operator: &Operator, tenant: &str, inviter: &str, link: &str) -> Email {
    Email {
        to: operator.email.clone(),
        subject: format!("{inviter} invited you to answer {tenant}'s chats"),
        text: format!(
            "Hello {name},\n\n{inviter} invited you to {tenant}'s team on Parley. Choose your password here to sign in:\n\n{link}\n\n\
             The link works once and expires in {lifetime}. If you were not expecting it, you can ignore this email.\n",
            name = operator.name,
            lifetime = lifetime_in_words()
        ),
        html: format!(
            "<p>Hello {name},</p><p>{inviter} invited you to {tenant}'s team on Parley.</p>\
             <p><a href=\"{link}\">Choose your password</a> to sign in.</p>\
             <p>The link works once and expires in {lifetime}. If you were not expecting it, you can ignore this email.</p>",
            name = escape(&operator.name),
            inviter = escape(inviter),
            tenant = escape(tenant),
            link = escape(link),
            lifetime = lifetime_in_words()
        ),
        thread: None,
    }
}

fn reset_email(operator: &Operator, tenant: &str, link: &str) -> Email {
    Email {
        to: operator.email.clone(),
        subject: format!("Choose a new password for {tenant}'s chats"),
        text: format!(
            "Hello {name},\n\nAn admin of {tenant} sent you this link to choose a new password:\n\n{link}\n\n\
             It works once and expires in {lifetime}. Your current password works until you choose a new one.\n",
            name = operator.name,
            lifetime = lifetime_in_words()
        ),
        html: format!(
            "<p>Hello {name},</p><p>An admin of {tenant} sent you this link to choose a new password:</p>\
             <p><a href=\"{link}\">Choose a new password</a></p>\
             <p>It works once and expires in {lifetime}. Your current password works until you choose a new one.</p>",
            name = escape(&operator.name),
            tenant = escape(tenant),
            link = escape(link),
            lifetime = lifetime_in_words()
        ),
        thread: None,
    }
}
