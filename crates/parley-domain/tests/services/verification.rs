//! `VerificationService`: a code sent to the visitor proves its address;
//! wrong codes spend the challenge, time ends it, and a tenant's widget
//! reaches its own conversations only.

use std::time::Duration;

use parley_domain::DomainError;
use parley_domain::model::{ChallengeId, SenderKind};
use parley_domain::verification::service::{ConfirmInput, StartInput, Started, Verified};
use parley_domain::verification::{CHALLENGE_TTL, MAX_ATTEMPTS, Method};
use parley_domain::widget::{OpenConversationInput, VisitorInput};

use crate::harness::{Services, TenantFixture, assert_refused};

const VISITOR: &str = "5f0c1a52-8d3e-4f7b-9a61-2c4e8b7d9f10";

/// A conversation the visitor `uuid` opens through the tenant's widget:
/// its public id.
async fn open(h: &Services, fixture: &TenantFixture, uuid: &str) -> String {
    let input = OpenConversationInput {
        token: fixture.installation.token.clone(),
        visitor_uuid: uuid.into(),
        message: "Hello, is my order on its way?".into(),
        subject: None,
        current_url: None,
        client_message_id: None,
        identity: Default::default(),
    };
    let (conversation, _) = h.widget.open_conversation(&h.caller(), input).await.expect("the visitor opens a conversation");
    conversation.public_id
}

async fn start(h: &Services, token: &str, public_id: &str, to: &str) -> Result<Started, DomainError> {
    let input = StartInput { token: token.into(), public_id: public_id.into(), method: Method::EmailOtp, target: Some(to.into()) };
    h.verification.start(&h.caller(), input).await
}

async fn confirm(h: &Services, token: &str, public_id: &str, challenge: ChallengeId, code: &str) -> Result<Verified, DomainError> {
    let input = ConfirmInput { token: token.into(), public_id: public_id.into(), challenge_id: challenge, code: code.into() };
    h.verification.confirm(&h.caller(), input).await
}

/// The visitor as the widget syncs it, changing nothing.
async fn visitor(h: &Services, token: &str) -> parley_domain::model::Visitor {
    let unchanged = VisitorInput {
        token: token.into(),
        uuid: VISITOR.into(),
        name: None,
        email: None,
        phone: None,
        current_url: None,
        identity: Default::default(),
        attributes: None,
        locale: None,
    };
    h.widget.sync_visitor(&h.caller(), unchanged).await.expect("the visitor syncs").visitor
}

/// A conversation of acme's visitor with an email challenge started:
/// the installation token, the conversation, the challenge and its code.
async fn challenged(h: &Services) -> (String, String, Started, String) {
    let acme = h.tenant("acme").await;
    let token = acme.installation.token.clone();
    let public_id = open(h, &acme, VISITOR).await;
    let started = start(h, &token, &public_id, "visitor@example.com").await.expect("started");
    let code = h.outbox.latest_code("visitor@example.com");
    (token, public_id, started, code)
}

/// A six-digit code that is not `code`.
fn other_than(code: &str) -> String {
    format!("{:06}", (code.parse::<u32>().expect("digits") + 1) % 1_000_000)
}

#[tokio::test]
async fn the_right_code_verifies_the_visitor_once() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let token = &acme.installation.token;
    let public_id = open(&h, &acme, VISITOR).await;

    let started = start(&h, token, &public_id, "visitor@example.com").await.expect("started");
    assert_eq!(started.method, Method::EmailOtp);
    assert_eq!(started.target_hint, "v***@example.com");
    assert_eq!(started.expires_at, h.now().plus(CHALLENGE_TTL));
    let emails = h.outbox.emails();
    assert_eq!(emails.len(), 1);
    assert_eq!(emails[0].0, acme.tenant.id, "sent on behalf of the visitor's tenant");
    assert_eq!(emails[0].1.subject, "Your acme Inc. verification code");
    let code = h.outbox.latest_code("visitor@example.com");

    h.clock.advance(Duration::from_secs(42));
    let verified = confirm(&h, token, &public_id, started.id, &format!(" {code} ")).await.expect("the right code");
    assert_eq!(verified.method, Method::EmailOtp);
    assert_eq!(verified.verified_at, h.now());
    assert_eq!(verified.conversation.public_id, public_id);
    assert_eq!(verified.conversation.verified_at, Some(h.now()));

    // The visitor is verified, with the proven address as its own.
    let visitor = visitor(&h, token).await;
    assert_eq!(visitor.verified_at, Some(h.now()));
    assert_eq!(visitor.verified_method, Some(Method::EmailOtp));
    assert_eq!(visitor.verified_target.as_deref(), Some("visitor@example.com"));
    assert_eq!(visitor.profile.email.as_deref(), Some("visitor@example.com"));
    // The conversation says so.
    let (conversation, messages, _) = h.widget.messages(&h.caller(), token, public_id.clone(), None).await.unwrap();
    assert_eq!(conversation.verified_at, Some(h.now()));
    let note = messages.last().unwrap();
    assert_eq!(note.sender.kind, SenderKind::System);
    assert_eq!(note.body, "The visitor verified their email address");

    // A code works once.
    assert_refused!(confirm(&h, token, &public_id, started.id, &code).await, DomainError::ChallengeExpired);
}

#[tokio::test]
async fn wrong_codes_count_and_the_last_allowed_one_spends_the_challenge() {
    let h = Services::new().await;
    let (token, public_id, started, code) = challenged(&h).await;
    let wrong = other_than(&code);

    for _ in 0..MAX_ATTEMPTS {
        assert_refused!(confirm(&h, &token, &public_id, started.id, &wrong).await, DomainError::InvalidCode);
    }
    assert_refused!(confirm(&h, &token, &public_id, started.id, &code).await, DomainError::ChallengeExpired);
    assert_eq!(visitor(&h, &token).await.verified_at, None);
}

#[tokio::test]
async fn fewer_wrong_codes_than_the_limit_leave_the_challenge_usable() {
    let h = Services::new().await;
    let (token, public_id, started, code) = challenged(&h).await;
    for _ in 0..MAX_ATTEMPTS - 1 {
        assert_refused!(confirm(&h, &token, &public_id, started.id, &other_than(&code)).await, DomainError::InvalidCode);
    }
    confirm(&h, &token, &public_id, started.id, &code).await.expect("one attempt was left");
}

#[tokio::test]
async fn a_challenge_ends_when_the_clock_passes_its_lifetime() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let token = &acme.installation.token;
    let public_id = open(&h, &acme, VISITOR).await;

    let first = start(&h, token, &public_id, "visitor@example.com").await.unwrap();
    let code = h.outbox.latest_code("visitor@example.com");
    h.clock.advance(CHALLENGE_TTL);
    assert_refused!(confirm(&h, token, &public_id, first.id, &code).await, DomainError::ChallengeExpired);

    // A new start, confirmed a second before its end, verifies.
    let second = start(&h, token, &public_id, "visitor@example.com").await.unwrap();
    let code = h.outbox.latest_code("visitor@example.com");
    h.clock.advance(CHALLENGE_TTL - Duration::from_secs(1));
    confirm(&h, token, &public_id, second.id, &code).await.expect("in time");
}

#[tokio::test]
async fn a_new_start_supersedes_the_previous_challenge() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let token = &acme.installation.token;
    let public_id = open(&h, &acme, VISITOR).await;
    let first = start(&h, token, &public_id, "visitor@example.com").await.unwrap();
    let first_code = h.outbox.latest_code("visitor@example.com");
    // One start per conversation every 30 seconds.
    assert_refused!(start(&h, token, &public_id, "visitor@example.com").await, DomainError::RateLimited { retry_after_secs: 30 });
    h.clock.advance(Duration::from_secs(30));
    let second = start(&h, token, &public_id, "visitor@example.com").await.unwrap();
    let second_code = h.outbox.latest_code("visitor@example.com");
    assert_ne!(first.id, second.id);

    assert_refused!(confirm(&h, token, &public_id, first.id, &first_code).await, DomainError::ChallengeExpired);
    confirm(&h, token, &public_id, second.id, &second_code).await.expect("the newest challenge");
}

#[tokio::test]
async fn another_tenants_widget_cannot_verify_a_conversation() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let globex = h.tenant("globex").await;
    let (mine, theirs) = (&acme.installation.token, &globex.installation.token);
    let public_id = open(&h, &acme, VISITOR).await;

    // Starting on it from the other tenant's widget finds nothing, and sends nothing.
    assert_refused!(start(&h, theirs, &public_id, "attacker@example.com").await, DomainError::NotFound);
    assert!(h.outbox.emails().is_empty());

    let started = start(&h, mine, &public_id, "visitor@example.com").await.unwrap();
    let code = h.outbox.latest_code("visitor@example.com");
    // Neither the right code nor wrong ones reach it through the other widget.
    assert_refused!(confirm(&h, theirs, &public_id, started.id, &code).await, DomainError::NotFound);
    for _ in 0..MAX_ATTEMPTS {
        assert_refused!(confirm(&h, theirs, &public_id, started.id, &other_than(&code)).await, DomainError::NotFound);
    }
    // Nor with a conversation of the other tenant's own.
    let own = open(&h, &globex, VISITOR).await;
    assert_refused!(confirm(&h, theirs, &own, started.id, &code).await, DomainError::NotFound);
    let (conversation, _, _) = h.widget.messages(&h.caller(), mine, public_id.clone(), None).await.unwrap();
    assert_eq!(conversation.verified_at, None);

    // Its own tenant's widget still can: nothing was spent.
    let verified = confirm(&h, mine, &public_id, started.id, &code).await.expect("the owner's widget");
    assert_eq!(verified.conversation.tenant_id, acme.tenant.id);
    let (other, _, _) = h.widget.messages(&h.caller(), theirs, own, None).await.unwrap();
    assert_eq!(other.verified_at, None, "the other tenant's visitor of the same uuid is not verified");
}

/// A verified visitor who gives another address is no longer verified,
/// and a poll that was up to date shows it at once: the clearing appends
/// no feed entry, and is counted as a change of each of its
/// conversations all the same.
#[tokio::test]
async fn another_address_clears_the_verification_in_the_very_next_poll() {
    let h = Services::new().await;
    let (token, public_id, started, code) = challenged(&h).await;
    confirm(&h, &token, &public_id, started.id, &code).await.expect("the right code");
    let (conversation, messages, _) = h.widget.messages(&h.caller(), &token, public_id.clone(), None).await.unwrap();
    assert!(conversation.verified_at.is_some());
    let latest = messages.last().expect("the verification's note").id;
    for _ in 0..2 {
        let (conversation, none, _) = h.widget.messages(&h.caller(), &token, public_id.clone(), Some(latest)).await.unwrap();
        assert!(none.is_empty() && conversation.verified_at.is_some());
    }
    let moved = VisitorInput {
        token: token.clone(),
        uuid: VISITOR.into(),
        name: None,
        email: Some("elsewhere@example.com".into()),
        phone: None,
        current_url: None,
        identity: Default::default(),
        attributes: None,
        locale: None,
    };
    h.widget.sync_visitor(&h.caller(), moved).await.expect("the visitor syncs");
    let (conversation, _, _) = h.widget.messages(&h.caller(), &token, public_id.clone(), Some(latest)).await.unwrap();
    assert_eq!(conversation.verified_at, None, "no longer verified, at once");
}
