//! `AuthService`: sign-in and its limits, the life of a token, logout,
//! and personal access tokens.

use std::time::Duration;

use parley_domain::DomainError;
use parley_domain::auth::{LoginInput, NewPersonalToken, SignIn};
use parley_domain::limits::{Rate, RateLimitSettings};
use parley_domain::model::TokenKind;

use crate::harness::{PASSWORD, START, Services, Settings, assert_refused, invalid_field};

const WINDOW: Duration = Duration::from_secs(15 * 60);

/// `parley serve`'s limits with `per_email` and `per_address` failed
/// sign-ins per 15 minutes.
fn failures(per_email: u32, per_address: u32) -> Settings {
    let rate = |count| Some(Rate { count, period: WINDOW });
    Settings {
        rate_limits: RateLimitSettings {
            login_failures_per_email: rate(per_email),
            login_failures_per_address: rate(per_address),
            ..RateLimitSettings::defaults()
        },
        ..Settings::default()
    }
}

#[tokio::test]
async fn a_wrong_password_or_an_unknown_email_is_refused_alike() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    assert_refused!(h.login(&acme.admin.email, "not the password at all").await, DomainError::InvalidCredentials);
    assert_refused!(h.login("nobody@acme.example.com", PASSWORD).await, DomainError::InvalidCredentials);
    assert_refused!(h.login(&acme.admin.email, "").await, DomainError::InvalidCredentials);
    let outcome = h.login(&acme.admin.email.to_uppercase(), PASSWORD).await.expect("the right password, in any case of the email");
    assert_eq!(outcome.session.operator.id, acme.admin.operator.id);
    assert_eq!(outcome.session.kind, TokenKind::Login);
    assert!(outcome.token.starts_with("pat_"));
}

#[tokio::test]
async fn failed_sign_ins_lock_the_email_until_they_leave_the_window() {
    let h = Services::with(failures(3, 100)).await;
    let acme = h.tenant("acme").await;
    let email = &acme.agent.email;
    // From different addresses: the email's count is what refuses.
    for _ in 0..3 {
        assert_refused!(h.login(email, "a wrong password").await, DomainError::InvalidCredentials);
    }
    assert_refused!(h.login(email, PASSWORD).await, DomainError::RateLimited { retry_after_secs: 900 });
    assert_refused!(h.login(email, "a wrong password").await, DomainError::RateLimited { .. });
    assert!(h.login(&acme.admin.email, PASSWORD).await.is_ok(), "another email is not locked");

    h.clock.advance(WINDOW - Duration::from_secs(60));
    assert_refused!(h.login(email, PASSWORD).await, DomainError::RateLimited { retry_after_secs: 60 });
    h.clock.advance(Duration::from_secs(60));
    let outcome = h.login(email, PASSWORD).await.expect("the failures have left the window");
    assert_eq!(outcome.session.operator.id, acme.agent.operator.id);
}

#[tokio::test]
async fn a_right_password_clears_the_emails_failures() {
    let h = Services::with(failures(3, 100)).await;
    let acme = h.tenant("acme").await;
    let email = &acme.agent.email;
    for _ in 0..2 {
        assert_refused!(h.login(email, "a wrong password").await, DomainError::InvalidCredentials);
    }
    h.login(email, PASSWORD).await.expect("under the limit");
    for _ in 0..2 {
        assert_refused!(h.login(email, "a wrong password").await, DomainError::InvalidCredentials);
    }
    h.login(email, PASSWORD).await.expect("the count started again at the last success");
}

#[tokio::test]
async fn failed_sign_ins_lock_the_address_whatever_the_emails() {
    let h = Services::with(failures(100, 3)).await;
    let acme = h.tenant("acme").await;
    let client = h.new_client();
    for email in [acme.admin.email.as_str(), acme.agent.email.as_str(), "nobody@acme.example.com"] {
        assert_refused!(h.login_from(client, email, "a wrong password").await, DomainError::InvalidCredentials);
    }
    assert_refused!(h.login_from(client, &acme.admin.email, PASSWORD).await, DomainError::RateLimited { retry_after_secs: 900 });
    h.login(&acme.admin.email, PASSWORD).await.expect("from another address");
    h.clock.advance(WINDOW);
    h.login_from(client, &acme.admin.email, PASSWORD).await.expect("the address's failures have left the window");
}

#[tokio::test]
async fn a_device_that_signed_in_before_is_not_locked_out_by_strangers() {
    let h = Services::with(failures(3, 100)).await;
    let acme = h.tenant("acme").await;
    let email = acme.agent.email.clone();
    let mine = h.new_client();
    let input = |password: &str, mark: Option<String>| LoginInput {
        email: email.clone(),
        password: password.into(),
        device_name: None,
        device_mark: mark,
    };
    let first = h.auth.login(mine, input(PASSWORD, None), SignIn::Mobile).await.unwrap();
    // Someone elsewhere spends the email's allowance.
    for _ in 0..3 {
        assert_refused!(h.login(&email, "guessing").await, DomainError::InvalidCredentials);
    }
    assert_refused!(h.login(&email, PASSWORD).await, DomainError::RateLimited { .. });
    assert_refused!(h.auth.login(mine, input(PASSWORD, None), SignIn::Mobile).await, DomainError::RateLimited { .. });
    // The operator's own device, with its mark, still signs in.
    let again = h.auth.login(mine, input(PASSWORD, Some(first.device_mark.clone())), SignIn::Mobile).await.expect("its device");
    assert_eq!(again.session.operator.id, acme.agent.operator.id);
    // And is judged by its own failures.
    for _ in 0..3 {
        let wrong = h.auth.login(mine, input("fat fingers", Some(again.device_mark.clone())), SignIn::Mobile).await;
        assert_refused!(wrong, DomainError::InvalidCredentials);
    }
    assert_refused!(
        h.auth.login(mine, input(PASSWORD, Some(again.device_mark.clone())), SignIn::Mobile).await,
        DomainError::RateLimited { .. }
    );
}

#[tokio::test]
async fn a_token_ends_when_the_clock_passes_its_lifetime() {
    let hour = Duration::from_secs(3600);
    let h = Services::with(Settings { token_ttl: hour, session_ttl: 2 * hour, ..Settings::default() }).await;
    let acme = h.tenant("acme").await;
    let bearer = &acme.agent.token;
    assert_eq!(acme.agent.session.expires_at, START.plus(hour));
    let web = h
        .auth
        .login(
            h.new_client(),
            LoginInput { email: acme.agent.email.clone(), password: PASSWORD.into(), device_name: None, device_mark: None },
            SignIn::Web,
        )
        .await
        .unwrap();
    assert!(web.token.starts_with("ses_"));
    assert_eq!(web.session.kind, TokenKind::Session);
    assert_eq!(web.session.expires_at, START.plus(2 * hour));
    // Each kind of token is taken only where it belongs.
    assert_refused!(h.auth.authenticate(bearer, SignIn::Web).await, DomainError::Unauthenticated);
    assert_refused!(h.auth.authenticate(&web.token, SignIn::Mobile).await, DomainError::Unauthenticated);

    h.clock.advance(hour - Duration::from_millis(1));
    let session = h.auth.authenticate(bearer, SignIn::Mobile).await.expect("a millisecond left");
    assert_eq!(session.operator.id, acme.agent.operator.id);
    h.clock.advance(Duration::from_millis(1));
    assert_refused!(h.auth.authenticate(bearer, SignIn::Mobile).await, DomainError::Unauthenticated);
    h.auth.authenticate(&web.token, SignIn::Web).await.expect("the web session lives longer");
    h.clock.advance(hour);
    assert_refused!(h.auth.authenticate(&web.token, SignIn::Web).await, DomainError::Unauthenticated);
    h.login(&acme.agent.email, PASSWORD).await.expect("signing in again gives a new one");
}

#[tokio::test]
async fn logout_revokes_the_token_in_use_only() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let other = h.sign_in(&acme.agent.operator, PASSWORD).await;
    let session = h.auth.authenticate(&acme.agent.token, SignIn::Mobile).await.unwrap();
    h.auth.logout(&session).await.unwrap();
    assert_refused!(h.auth.authenticate(&acme.agent.token, SignIn::Mobile).await, DomainError::Unauthenticated);
    assert!(h.authenticates(&other.token).await, "the operator's other device stays signed in");
    assert!(h.authenticates(&acme.admin.token).await);
}

#[tokio::test]
async fn a_personal_token_made_from_a_login_ends_with_it_and_cannot_administer() {
    let day = Duration::from_secs(86_400);
    let h = Services::with(Settings { token_ttl: 2 * day, ..Settings::default() }).await;
    let acme = h.tenant("acme").await;
    let login = &acme.admin.session;
    assert_eq!(login.kind, TokenKind::Login);
    let named = |name: &str, days| NewPersonalToken { name: name.into(), expires_in_days: days };

    let (long, long_token) = h.auth.create_personal_token(login, named("curl", 30)).await.unwrap();
    assert_eq!(long.expires_at, login.expires_at, "no longer than the login that made it");
    let (short, _) = h.auth.create_personal_token(login, named("script", 1)).await.unwrap();
    assert_eq!(short.expires_at, START.plus(day), "shorter when asked");
    let listed = h.auth.personal_tokens(login).await.unwrap();
    assert_eq!(listed.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["script", "curl"], "newest first, logins not listed");

    // It signs in to the mobile API, as a personal token ...
    let personal = h.auth.authenticate(&long_token, SignIn::Mobile).await.expect("a bearer token");
    assert_eq!(personal.kind, TokenKind::Personal);
    assert_eq!(personal.operator.id, acme.admin.operator.id);
    // ... which is refused for the admin's work, its own tokens included.
    assert_refused!(h.admin.sites(&personal).await, DomainError::Forbidden(_));
    assert_refused!(h.admin.operators(&personal).await, DomainError::Forbidden(_));
    assert_refused!(h.webhooks.list(&personal).await, DomainError::Forbidden(_));
    assert_refused!(h.auth.personal_tokens(&personal).await, DomainError::Forbidden(_));
    assert_refused!(h.auth.create_personal_token(&personal, named("more", 365)).await, DomainError::Forbidden(_));
    assert_refused!(h.auth.revoke_personal_token(&personal, short.id).await, DomainError::Forbidden(_));

    h.clock.advance(2 * day);
    assert_refused!(h.auth.authenticate(&long_token, SignIn::Mobile).await, DomainError::Unauthenticated);
    assert!(!h.authenticates(&acme.admin.token).await);
}

#[tokio::test]
async fn a_personal_token_from_the_web_app_lives_as_asked_and_ends_on_revocation() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let input = LoginInput { email: acme.admin.email.clone(), password: PASSWORD.into(), device_name: None, device_mark: None };
    let web = h.auth.login(h.new_client(), input, SignIn::Web).await.unwrap().session;
    let named = |name: &str, days| NewPersonalToken { name: name.into(), expires_in_days: days };

    for days in [0, 366] {
        assert_refused!(h.auth.create_personal_token(&web, named("bad", days)).await, e if invalid_field(&e, "expires_in_days"));
    }
    let (made, token) = h.auth.create_personal_token(&web, named("ci", 30)).await.unwrap();
    assert_eq!(made.expires_at, START.plus(Duration::from_secs(30 * 86_400)), "a signed-in person sets its life");
    assert_refused!(h.auth.create_personal_token(&web, named("ci", 10)).await, DomainError::Conflict(_));
    assert_refused!(h.auth.create_personal_token(&acme.agent.session, named("mine", 10)).await, DomainError::Forbidden(_));

    // Only personal tokens are revoked by id: not the admin's login.
    assert_refused!(h.auth.revoke_personal_token(&web, acme.admin.session.token_id).await, DomainError::NotFound);
    assert!(h.authenticates(&acme.admin.token).await);
    h.auth.revoke_personal_token(&web, made.id).await.unwrap();
    assert!(!h.authenticates(&token).await);
    assert!(h.auth.personal_tokens(&web).await.unwrap().is_empty(), "a revoked token is no longer listed");
    assert_refused!(h.auth.revoke_personal_token(&web, made.id).await, DomainError::NotFound);
}
