//! `AdminService`: admins only, each tenant alone, operators' emails
//! unique, and an operator's sessions ended by disabling it or by a new
//! password.

use parley_domain::DomainError;
use parley_domain::admin::{NewInstallationInput, NewOperatorInput, OperatorPatch};
use parley_domain::auth::{LoginInput, SignIn};
use parley_domain::model::{Role, SiteId};

use crate::harness::{PASSWORD, Services, assert_refused, invalid_field, site_input};

fn operator_input(email: &str, role: Role, site_ids: Vec<SiteId>) -> NewOperatorInput {
    NewOperatorInput { email: email.into(), name: "Sam".into(), password: PASSWORD.into(), role, site_ids }
}

fn installation_input() -> NewInstallationInput {
    NewInstallationInput { name: Some("Shop".into()), installation_type: Some("web".into()) }
}

#[tokio::test]
async fn an_agent_is_refused_every_admin_operation() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let agent = &acme.agent.session;
    let admin_id = acme.admin.operator.id;

    assert_refused!(h.admin.sites(agent).await, DomainError::Forbidden(_));
    assert_refused!(h.admin.sites_with_installations(agent).await, DomainError::Forbidden(_));
    assert_refused!(h.admin.create_site(agent, site_input("Mine", &[])).await, DomainError::Forbidden(_));
    assert_refused!(h.admin.installations(agent, acme.site.id).await, DomainError::Forbidden(_));
    assert_refused!(h.admin.installation(agent, acme.installation.id).await, DomainError::Forbidden(_));
    assert_refused!(h.admin.create_installation(agent, acme.site.id, installation_input()).await, DomainError::Forbidden(_));
    assert_refused!(h.admin.set_installation_enabled(agent, acme.installation.id, false).await, DomainError::Forbidden(_));
    assert_refused!(h.admin.operators(agent).await, DomainError::Forbidden(_));
    assert_refused!(
        h.admin.create_operator(agent, operator_input("boss@acme.example.com", Role::Admin, vec![])).await,
        DomainError::Forbidden(_)
    );
    // Not even to promote itself or to disable the admin.
    let promote = OperatorPatch { role: Some(Role::Admin), ..OperatorPatch::default() };
    assert_refused!(h.admin.update_operator(agent, acme.agent.operator.id, promote).await, DomainError::Forbidden(_));
    let disable = OperatorPatch { active: Some(false), ..OperatorPatch::default() };
    assert_refused!(h.admin.update_operator(agent, admin_id, disable).await, DomainError::Forbidden(_));

    // Nothing of it happened.
    let (site, installations) = h.admin.installations(&acme.admin.session, acme.site.id).await.unwrap();
    assert_eq!(site.id, acme.site.id);
    assert_eq!(installations.len(), 1);
    assert!(installations[0].enabled);
    let operators = h.admin.operators(&acme.admin.session).await.unwrap();
    assert_eq!(operators.len(), 2, "the admin and the agent only");
    let agent_now = operators.iter().find(|o| o.id == acme.agent.operator.id).unwrap();
    assert_eq!(agent_now.role, Role::Agent);
    assert!(h.authenticates(&acme.admin.token).await);
}

#[tokio::test]
async fn what_one_tenant_makes_is_invisible_to_another_tenants_admin() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let globex = h.tenant("globex").await;
    let (a, g) = (&acme.admin.session, &globex.admin.session);

    let site = h.admin.create_site(a, site_input("Acme shop", &["shop.acme.example.com"])).await.unwrap();
    let (installation, _) = h.admin.create_installation(a, site.id, installation_input()).await.unwrap();
    let operator = h.admin.create_operator(a, operator_input("sam@acme.example.com", Role::Agent, vec![site.id])).await.unwrap();

    // Listings hold the tenant's own only.
    let sites = h.admin.sites(g).await.unwrap();
    assert_eq!(sites.iter().map(|s| s.id).collect::<Vec<_>>(), vec![globex.site.id]);
    let all = h.admin.sites_with_installations(g).await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].1.iter().map(|i| i.id).collect::<Vec<_>>(), vec![globex.installation.id]);
    let operators = h.admin.operators(g).await.unwrap();
    assert!(operators.iter().all(|o| o.tenant_id == globex.tenant.id), "{operators:?}");
    assert!(!operators.iter().any(|o| o.id == operator.id));

    // Reached by id, they are not found: the same answer as an unknown id.
    assert_refused!(h.admin.installations(g, site.id).await, DomainError::NotFound);
    assert_refused!(h.admin.installation(g, installation.id).await, DomainError::NotFound);
    assert_refused!(h.admin.create_installation(g, site.id, installation_input()).await, DomainError::NotFound);
    assert_refused!(h.admin.set_installation_enabled(g, installation.id, false).await, DomainError::NotFound);
    let disable = OperatorPatch { active: Some(false), ..OperatorPatch::default() };
    assert_refused!(h.admin.update_operator(g, operator.id, disable).await, DomainError::NotFound);
    let new_password = OperatorPatch { password: Some("another long password".into()), ..OperatorPatch::default() };
    assert_refused!(h.admin.update_operator(g, acme.agent.operator.id, new_password).await, DomainError::NotFound);
    // Another tenant's site cannot be given to one's own operators either.
    let refused = h.admin.create_operator(g, operator_input("kim@globex.example.com", Role::Agent, vec![site.id])).await;
    assert_refused!(refused, e if invalid_field(&e, "site_ids"));
    let moved = OperatorPatch { site_ids: Some(vec![site.id]), ..OperatorPatch::default() };
    assert_refused!(h.admin.update_operator(g, globex.agent.operator.id, moved).await, e if invalid_field(&e, "site_ids"));

    // And the owner's things are as they were.
    let (found, site_of) = h.admin.installation(a, installation.id).await.unwrap();
    assert!(found.enabled);
    assert_eq!(site_of.id, site.id);
    let sams = h.admin.operators(a).await.unwrap();
    let sam = sams.iter().find(|o| o.id == operator.id).expect("still there");
    assert!(sam.active);
    assert!(h.authenticates(&acme.agent.token).await, "the other tenant's password change did not happen");
    let g_agent = h.admin.operators(g).await.unwrap().into_iter().find(|o| o.id == globex.agent.operator.id).unwrap();
    assert_eq!(g_agent.site_ids, vec![globex.site.id]);
}

#[tokio::test]
async fn an_operators_email_is_unique_whatever_its_case_and_tenant() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let globex = h.tenant("globex").await;

    let sam = h.admin.create_operator(&acme.admin.session, operator_input("Sam@Acme.example.com", Role::Agent, vec![])).await.unwrap();
    assert_eq!(sam.email, "Sam@Acme.example.com");

    let again = h.admin.create_operator(&acme.admin.session, operator_input("sam@acme.EXAMPLE.com", Role::Admin, vec![])).await;
    match again {
        Err(DomainError::Validation(f)) => assert_eq!(f.fields()["email"], vec!["is already in use".to_owned()]),
        Err(e) => panic!("expected a validation error, got {e:?}"),
        Ok(op) => panic!("a second operator was made: {op:?}"),
    }
    // Sign-in is by email alone, so another tenant cannot have it either,
    // nor the fixtures' own addresses in another case.
    let elsewhere = h.admin.create_operator(&globex.admin.session, operator_input("SAM@ACME.EXAMPLE.COM", Role::Agent, vec![])).await;
    assert_refused!(elsewhere, e if invalid_field(&e, "email"));
    let admins = h.admin.create_operator(&globex.admin.session, operator_input("Admin@Acme.Example.com", Role::Agent, vec![])).await;
    assert_refused!(admins, e if invalid_field(&e, "email"));

    assert_eq!(h.admin.operators(&acme.admin.session).await.unwrap().len(), 3);
    assert_eq!(h.admin.operators(&globex.admin.session).await.unwrap().len(), 2);
    // The one that was made signs in, in any case.
    let outcome = h.login("SAM@acme.example.com", PASSWORD).await.expect("sign-in ignores the email's case");
    assert_eq!(outcome.session.operator.id, sam.id);
}

#[tokio::test]
async fn disabling_an_operator_ends_its_sessions_and_sign_ins() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let agent = &acme.agent;
    let second = h.sign_in(&agent.operator, PASSWORD).await;
    let input = LoginInput { email: agent.email.clone(), password: PASSWORD.into(), device_name: None, device_mark: None };
    let web = h.auth.login(h.new_client(), input, SignIn::Web).await.unwrap();
    assert!(h.authenticates(&agent.token).await);

    let disable = OperatorPatch { active: Some(false), ..OperatorPatch::default() };
    let disabled = h.admin.update_operator(&acme.admin.session, agent.operator.id, disable).await.unwrap();
    assert!(!disabled.active);

    assert!(!h.authenticates(&agent.token).await, "its token ends");
    assert!(!h.authenticates(&second.token).await, "every one of its tokens");
    assert_refused!(h.auth.authenticate(&web.token, SignIn::Web).await, DomainError::Unauthenticated);
    assert_refused!(h.login(&agent.email, PASSWORD).await, DomainError::InvalidCredentials);
    assert!(h.authenticates(&acme.admin.token).await, "the admin's own session is untouched");

    // Enabled again, it signs in anew; the old tokens stay ended.
    let enable = OperatorPatch { active: Some(true), ..OperatorPatch::default() };
    h.admin.update_operator(&acme.admin.session, agent.operator.id, enable).await.unwrap();
    assert!(!h.authenticates(&agent.token).await);
    let fresh = h.login(&agent.email, PASSWORD).await.expect("enabled again");
    assert!(h.authenticates(&fresh.token).await);
}

#[tokio::test]
async fn a_new_password_ends_the_operators_sessions() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let agent = &acme.agent;
    let renamed = OperatorPatch { name: Some("Renamed".into()), ..OperatorPatch::default() };
    h.admin.update_operator(&acme.admin.session, agent.operator.id, renamed).await.unwrap();
    assert!(h.authenticates(&agent.token).await, "a change of name ends nothing");

    let new_password = "a brand new password";
    let patch = OperatorPatch { password: Some(new_password.into()), ..OperatorPatch::default() };
    h.admin.update_operator(&acme.admin.session, agent.operator.id, patch).await.unwrap();

    assert!(!h.authenticates(&agent.token).await);
    assert_refused!(h.login(&agent.email, PASSWORD).await, DomainError::InvalidCredentials);
    let outcome = h.login(&agent.email, new_password).await.expect("the new password signs in");
    assert!(h.authenticates(&outcome.token).await);
    assert!(h.authenticates(&acme.admin.token).await);
}

#[tokio::test]
async fn an_admin_cannot_disable_or_demote_itself() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let me = acme.admin.operator.id;
    let patch = OperatorPatch { active: Some(false), role: Some(Role::Agent), ..OperatorPatch::default() };
    match h.admin.update_operator(&acme.admin.session, me, patch).await {
        Err(DomainError::Validation(f)) => assert_eq!(f.fields().keys().collect::<Vec<_>>(), ["active", "role"]),
        Err(e) => panic!("expected a validation error, got {e:?}"),
        Ok(op) => panic!("the admin changed itself: {op:?}"),
    }
    assert!(h.authenticates(&acme.admin.token).await);
    let operators = h.admin.operators(&acme.admin.session).await.unwrap();
    let admin = operators.iter().find(|o| o.id == me).unwrap();
    assert!(admin.active);
    assert_eq!(admin.role, Role::Admin);
}
