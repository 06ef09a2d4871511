//! Starting and confirming verifications.

use std::sync::Arc;

use super::channels::{Channels, SendError};
use super::limits::VerificationLimits;
use super::{CHALLENGE_TTL, Challenge, ChallengeStatus, MAX_ATTEMPTS, Method, NewChallenge, codes, messages};
use crate::clock::{Clock, Timestamp};
use crate::error::DomainError;
use crate::events;
use crate::limits::{ClientKey, SlidingWindow};
use crate::mask;
use crate::model::*;
use crate::store::{Database, WriteTx};
use crate::widget::{Caller, WidgetService};

pub struct StartInput {
    pub token: String,
    pub public_id: String,
    pub method: Method,
    /// Already checked against the method (email or E.164 phone).
    pub target: Option<String>,
}

pub struct ConfirmInput {
    pub token: String,
    pub public_id: String,
    pub challenge_id: ChallengeId,
    pub code: String,
}

pub struct Started {
    pub id: ChallengeId,
    pub method: Method,
    pub expires_at: Timestamp,
    pub target_hint: String,
}

pub struct Verified {
    pub method: Method,
    pub verified_at: Timestamp,
    pub conversation: Conversation,
}

/// What a confirmation attempt came to; a wrong code is committed (it
/// counts) and then reported as an error.
enum Outcome {
    Verified(Verified),
    WrongCode,
    Expired,
}

#[derive(Clone)]
pub struct VerificationService {
    pub(super) db: Database,
    pub(super) clock: Arc<dyn Clock>,
    widget: WidgetService,
    pub(super) channels: Channels,
    pub(super) limits: VerificationLimits,
    per_address: Arc<SlidingWindow<ClientKey>>,
    /// `PARLEY_PUBLIC_URL`: magic links are built from it, never from a
    /// request's Host header.
    public_url: String,
}

impl VerificationService {
    pub fn new(
        db: Database,
        clock: Arc<dyn Clock>,
        widget: WidgetService,
        channels: Channels,
        limits: VerificationLimits,
        public_url: String,
    ) -> Self {
        let per_address = Arc::new(SlidingWindow::new(limits.per_address));
        Self { db, clock, widget, channels, limits, per_address, public_url }
    }

    /// The methods the widget may offer.
    pub fn methods(&self) -> Vec<Method> {
        self.channels.methods()
    }

    pub async fn start(&self, caller: &Caller, input: StartInput) -> Result<Started, DomainError> {
        let ctx = self.widget.resolve_for_write(&input.token, caller, false).await?;
        if !self.channels.available(input.method) {
            return Err(DomainError::invalid("method", "is not available on this service"));
        }
        let now = self.clock.now();
        self.per_address.reserve(&caller.key(), now)?;
        let code = match input.method {
            Method::MagicLink => codes::link_code()?,
            Method::EmailOtp | Method::SmsOtp => codes::otp()?,
        };
        let salt = codes::salt()?;
        let hash = codes::digest(&salt, &code);
        let (scope, tenant, limits, method) = (ctx.scope(), ctx.tenant.clone(), self.limits.clone(), input.method);
        let created = self
            .db
            .write(move |tx| {
                let (conversation, visitor) =
                    tx.conversation_and_visitor_by_public_id(scope.into(), &input.public_id)?.ok_or(DomainError::NotFound)?;
                let known = if method.uses_phone() { visitor.profile.phone.clone() } else { visitor.profile.email.clone() };
                let target = input.target.or(known).ok_or_else(|| {
                    let what = if method.uses_phone() { "phone number" } else { "email address" };
                    DomainError::invalid("target", format!("no {what} is known for this visitor: send one as target"))
                })?;
                limits.check(tx, tenant.id, conversation.id, method, &target, now)?;
                let id = tx.insert_challenge(
                    scope,
                    &NewChallenge {
                        conversation_id: conversation.id,
                        visitor_id: visitor.id,
                        method,
                        target: target.clone(),
                        code_salt: salt,
                        code_hash: hash,
                        created_at: now,
                        expires_at: now.plus(CHALLENGE_TTL),
                    },
                )?;
                Ok((id, target))
            })
            .await;
        let (id, target) = match created {
            Ok(c) => c,
            Err(e) => {
                // Nothing was started: the address keeps its allowance.
                self.per_address.forget(&caller.key(), now);
                return Err(e);
            }
        };
        if let Err(reason) = self.send(ctx.tenant.id, &ctx.tenant.name, method, &target, id, &code).await {
            tracing::error!(challenge = id.0, method = method.as_str(), %reason, "could not send a verification message");
            let failed = self.db.write(move |tx| Ok(tx.update_challenge(scope, id, ChallengeStatus::Failed, 0, None)?)).await;
            if let Err(e) = failed {
                tracing::error!(challenge = id.0, error = %e, "could not mark a verification challenge failed");
            }
            return Err(not_sent(&reason, "target", method.uses_phone(), "the verification message could not be sent; try again later"));
        }
        let target_hint = if method.uses_phone() { mask::phone(&target) } else { mask::email(&target) };
        Ok(Started { id, method, expires_at: now.plus(CHALLENGE_TTL), target_hint })
    }

    async fn send(
        &self,
        tenant: TenantId,
        tenant_name: &str,
        method: Method,
        target: &str,
        id: ChallengeId,
        code: &str,
    ) -> Result<(), SendError> {
        match method {
            Method::EmailOtp => self.email(tenant, messages::otp_email(target, tenant_name, code)).await,
            Method::MagicLink => {
                let link = format!("{}/verify/{}?code={code}", self.public_url, id.0);
                self.email(tenant, messages::link_email(target, tenant_name, &link)).await
            }
            Method::SmsOtp => match &self.channels.sms {
                Some(sms) => sms.send(tenant, messages::otp_sms(target, tenant_name, code)).await,
                None => Err(SendError::transient("no SMS channel")),
            },
        }
    }

    async fn email(&self, tenant: TenantId, email: super::channels::Email) -> Result<(), SendError> {
        match &self.channels.email {
            Some(mailer) => mailer.send(tenant, email).await,
            None => Err(SendError::transient("no email channel")),
        }
    }

    /// Confirms a code from the widget.
    pub async fn confirm(&self, caller: &Caller, input: ConfirmInput) -> Result<Verified, DomainError> {
        let ctx = self.widget.resolve_for_write(&input.token, caller, false).await?;
        let (scope, tenant, now) = (ctx.scope(), ctx.tenant.clone(), self.clock.now());
        let outcome = self
            .db
            .write(move |tx| {
                let conversation = tx.conversation_by_public_id(scope.into(), &input.public_id)?.ok_or(DomainError::NotFound)?;
                let challenge = tx.challenge(scope, conversation.id, input.challenge_id)?.ok_or(DomainError::NotFound)?;
                settle(tx, &tenant, challenge, &input.code, now, CountWrong::Yes)
            })
            .await?;
        finish(outcome)
    }

    /// Confirms from the magic link itself: the challenge id and its long
    /// code are the capability.
    pub async fn confirm_link(&self, challenge_id: ChallengeId, code: String) -> Result<Verified, DomainError> {
        let now = self.clock.now();
        let outcome = self
            .db
            .write(move |tx| {
                let challenge = tx.challenge_by_id(challenge_id)?.filter(|c| c.method == Method::MagicLink).ok_or(DomainError::NotFound)?;
                let tenant = tx.tenant(challenge.scope.tenant)?.ok_or(DomainError::NotFound)?;
                // Challenge ids are sequential and this route needs no token:
                // a wrong code here must not spend someone else's challenge.
                // Nobody guesses 256 bits, so not counting costs nothing.
                settle(tx, &tenant, challenge, &code, now, CountWrong::No)
            })
            .await?;
        finish(outcome)
    }

    /// Forgets idle per-address counts; called by the sweeper.
    pub fn shrink(&self) {
        self.per_address.shrink(self.clock.now());
    }
}

fn finish(outcome: Outcome) -> Result<Verified, DomainError> {
    match outcome {
        Outcome::Verified(v) => Ok(v),
        Outcome::WrongCode => Err(DomainError::InvalidCode),
        Outcome::Expired => Err(DomainError::ChallengeExpired),
    }
}

/// Whether a wrong code counts towards spending the challenge.
#[derive(PartialEq, Eq)]
enum CountWrong {
    Yes,
    No,
}

/// Applies one code to a challenge, inside the write unit.
fn settle(
    tx: &mut dyn WriteTx,
    tenant: &Tenant,
    challenge: Challenge,
    code: &str,
    now: Timestamp,
    count: CountWrong,
) -> Result<Outcome, DomainError> {
    let scope = challenge.scope;
    if challenge.status != ChallengeStatus::Active || now >= challenge.expires_at {
        return Ok(Outcome::Expired);
    }
    if !codes::matches(&challenge.code_salt, &challenge.code_hash, code) {
        if count == CountWrong::No {
            return Ok(Outcome::WrongCode);
        }
        let attempts = challenge.attempts + 1;
        let status = if attempts >= MAX_ATTEMPTS { ChallengeStatus::Spent } else { ChallengeStatus::Active };
        tx.update_challenge(scope, challenge.id, status, attempts, None)?;
        return Ok(Outcome::WrongCode);
    }
    tx.update_challenge(scope, challenge.id, ChallengeStatus::Verified, challenge.attempts, Some(now))?;
    let mut conversation = tx.conversation(scope.into(), challenge.conversation_id)?.ok_or(DomainError::NotFound)?;
    let mut visitor = tx.visitor(scope, challenge.visitor_id)?.ok_or(DomainError::NotFound)?;
    // The proven address or number becomes the visitor's own.
    if challenge.method.uses_phone() {
        visitor.profile.phone = Some(challenge.target.clone());
    } else {
        visitor.profile.email = Some(challenge.target.clone());
    }
    tx.update_visitor_profile(scope, visitor.id, &visitor.profile, now)?;
    tx.mark_verified(scope, visitor.id, conversation.id, challenge.method, &challenge.target, now)?;
    conversation.verified_at = Some(now);
    visitor.verified_at = Some(now);
    visitor.verified_method = Some(challenge.method);
    visitor.verified_target = Some(challenge.target.clone());
    let what = if challenge.method.uses_phone() { "phone number" } else { "email address" };
    let note = NewMessage {
        conversation_id: conversation.id,
        sender: Sender { kind: SenderKind::System, name: None, operator_id: None },
        body: format!("The visitor verified their {what}"),
        internal: false,
        created_at: now,
        client_message_id: None,
        attachment_ids: Vec::new(),
    };
    crate::feed::record::message(tx, tenant, scope.into(), &conversation, &note)?;
    let verified = events::verification_completed(tenant, &conversation, &visitor, challenge.method.as_str(), now);
    crate::feed::record::conversation_changed(tx, tenant, &conversation, Some(verified), true, now)?;
    Ok(Outcome::Verified(Verified { method: challenge.method, verified_at: now, conversation }))
}

/// What a client is told when a message could not be sent: a recipient
/// the provider refused for good is the client's to fix (422 on `field`);
/// anything else is an outage (`transient`, 503).
pub(super) fn not_sent(error: &SendError, field: &'static str, phone: bool, transient: &'static str) -> DomainError {
    if error.permanent {
        let what = if phone { "phone number" } else { "email address" };
        DomainError::invalid(field, format!("this {what} was refused by the provider; check it"))
    } else {
        DomainError::NotSent(transient)
    }
}
