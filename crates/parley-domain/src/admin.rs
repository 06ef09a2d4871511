//! Tenant administration: sites, installations and operators, for
//! operators with the admin role only.

use std::sync::Arc;

use serde_json::json;

use crate::audit::{self, Action, Actor};
use crate::clock::Clock;
use crate::error::{DomainError, FieldErrors};
use crate::events;
use crate::model::*;
use crate::password;
use crate::store::{Database, StoreError};
use crate::tenancy::{NewSiteInput, Tenancy};
use crate::widget::embed_snippet;
use crate::{identity, ids};

/// What a page shows of an installation's identity secret, to send back
/// with a rotation: a fingerprint of it, or `none`.
pub fn identity_shown(installation: &Installation) -> String {
    installation.identity.secret.as_deref().map_or_else(|| "none".to_owned(), crate::webhooks::signing::fingerprint)
}

/// What an admin changes about a site; `None` leaves a part, `Some(None)`
/// clears it.
#[derive(Clone, Debug, Default)]
pub struct SitePatch {
    pub name: Option<String>,
    /// Checked and lower-cased by `validate::domain`.
    pub domains: Option<Vec<String>>,
    pub title: Option<String>,
    pub greeting: Option<String>,
    pub accent_color: Option<String>,
    pub privacy_text: Option<String>,
    pub privacy_url: Option<Option<String>>,
    pub locale: Option<Option<String>>,
    pub texts: Option<std::collections::BTreeMap<String, SiteTexts>>,
    pub hours: Option<Option<crate::hours::BusinessHours>>,
    /// The kinds of file the site takes; an empty list takes none.
    pub file_kinds: Option<Vec<crate::attachments::kinds::FileKind>>,
}

impl SitePatch {
    /// What the audit log records of the change: each part given.
    fn described(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        let texts = [
            ("name", &self.name),
            ("widget_title", &self.title),
            ("widget_greeting", &self.greeting),
            ("accent_color", &self.accent_color),
            ("privacy_text", &self.privacy_text),
        ];
        for (field, value) in texts {
            if let Some(value) = value {
                out.insert(field.into(), json!(value));
            }
        }
        if let Some(domains) = &self.domains {
            out.insert("domains".into(), json!(domains));
        }
        if let Some(url) = &self.privacy_url {
            out.insert("privacy_url".into(), json!(url));
        }
        if let Some(locale) = &self.locale {
            out.insert("locale".into(), json!(locale));
        }
        if let Some(texts) = &self.texts {
            out.insert("texts".into(), json!(texts));
        }
        if let Some(hours) = &self.hours {
            out.insert("business_hours".into(), json!(hours));
        }
        if let Some(kinds) = &self.file_kinds {
            out.insert("file_kinds".into(), json!(kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>()));
        }
        out.into()
    }

    /// The rules the request readers apply, again where the change is
    /// made: whoever builds a patch, nothing unknown is stored.
    fn check(&self) -> Result<(), DomainError> {
        let mut errors = FieldErrors::new();
        let known = |language: &str| crate::locale::LANGUAGES.contains(&language);
        for domain in self.domains.iter().flatten() {
            if let Err(e) = crate::validate::domain(domain) {
                errors.add("domains", e);
            }
        }
        if let Some(Some(locale)) = &self.locale
            && !known(locale)
        {
            errors.add("locale", "is not a language the widget speaks");
        }
        for language in self.texts.iter().flat_map(|t| t.keys()) {
            if !known(language) {
                errors.add("texts", format!("{language} is not a language the widget speaks"));
            }
        }
        if let Some(Some(hours)) = &self.hours {
            for (field, messages) in hours.check("business_hours").fields() {
                messages.iter().for_each(|m| errors.add(field, m.clone()));
            }
        }
        if errors.is_empty() { Ok(()) } else { Err(DomainError::Validation(errors)) }
    }
}

/// What an admin changes about an installation; `None` leaves it.
#[derive(Clone, Copy, Debug, Default)]
pub struct InstallationPatch {
    pub enabled: Option<bool>,
    pub identity_required: Option<bool>,
}

pub struct NewInstallationInput {
    pub name: Option<String>,
    pub installation_type: Option<String>,
}

pub use crate::tenancy::NewOperatorInput;

#[derive(Default)]
pub struct OperatorPatch {
    pub name: Option<String>,
    pub password: Option<String>,
    pub role: Option<Role>,
    pub active: Option<bool>,
    pub site_ids: Option<Vec<SiteId>>,
}

#[derive(Clone)]
pub struct AdminService {
    db: Database,
    clock: Arc<dyn Clock>,
    tenancy: Tenancy,
    public_url: String,
}

/// The tenant an admin administers. A personal access token is for the
/// mobile API only: with the admin API it could make an admin of its own
/// (or a new password for its operator) and so outlive its revocation.
pub(crate) fn require_admin(session: &Session) -> Result<TenantId, DomainError> {
    if session.kind == TokenKind::Personal {
        return Err(DomainError::Forbidden("a personal access token is for the mobile API; sign in to administer the tenant"));
    }
    match session.operator.role {
        Role::Admin => Ok(session.tenant.id),
        Role::Agent => Err(DomainError::Forbidden("this needs an operator with the admin role")),
    }
}

/// An operator's email that another has: the field's error, as a form
/// shows it; any other failure as it is.
pub(crate) fn email_taken(e: DomainError) -> DomainError {
    match e {
        DomainError::Store(StoreError::Duplicate(_)) => DomainError::invalid("email", "is already in use"),
        e => e,
    }
}

/// Refuses site ids that are not the tenant's, naming the field.
pub(crate) fn check_sites(sites: &[Site], ids: &[SiteId]) -> Result<(), DomainError> {
    match ids.iter().find(|id| !sites.iter().any(|s| s.id == **id)) {
        Some(id) => Err(DomainError::invalid("site_ids", format!("site {} does not exist", id.0))),
        None => Ok(()),
    }
}

impl AdminService {
    pub fn new(db: Database, clock: Arc<dyn Clock>, public_url: String) -> Self {
        let tenancy = Tenancy::new(db.clone(), Arc::clone(&clock));
        Self { db, clock, tenancy, public_url }
    }

    pub fn embed_snippet(&self, installation: &Installation) -> String {
        embed_snippet(&self.public_url, &installation.token)
    }

    pub async fn sites(&self, session: &Session) -> Result<Vec<Site>, DomainError> {
        let tenant = require_admin(session)?;
        self.db.read(move |r| Ok(r.sites(tenant)?)).await
    }

    pub async fn create_site(&self, session: &Session, input: NewSiteInput) -> Result<Site, DomainError> {
        let tenant = require_admin(session)?;
        self.tenancy.create_site(tenant, input, Some(Actor::of(session))).await
    }

    /// Changes what `patch` gives of the site (name, domains, the widget's
    /// look and texts, language, hours, file kinds), and returns the site.
    pub async fn update_site(&self, session: &Session, id: SiteId, patch: SitePatch) -> Result<Site, DomainError> {
        let tenant = require_admin(session)?;
        patch.check()?;
        let (by, now) = (Actor::of(session), self.clock.now());
        self.db
            .write(move |tx| {
                let mut site = tx.lock_site(tenant, id)?.ok_or(DomainError::NotFound)?;
                let details = patch.described();
                if let Some(name) = patch.name {
                    site.name = name;
                }
                if let Some(domains) = patch.domains {
                    site.domains = domains.into_iter().fold(Vec::new(), |mut kept, d| {
                        if !kept.contains(&d) {
                            kept.push(d);
                        }
                        kept
                    });
                }
                let look = &mut site.appearance;
                if let Some(title) = patch.title {
                    look.title = title;
                }
                if let Some(greeting) = patch.greeting {
                    look.greeting = greeting;
                }
                if let Some(colour) = patch.accent_color {
                    look.accent_color = colour;
                }
                if let Some(text) = patch.privacy_text {
                    look.privacy_text = text;
                }
                if let Some(url) = patch.privacy_url {
                    look.privacy_url = url;
                }
                let settings = &mut site.settings;
                if let Some(locale) = patch.locale {
                    settings.locale = locale;
                }
                if let Some(texts) = patch.texts {
                    settings.texts = texts;
                }
                if let Some(hours) = patch.hours {
                    settings.hours = hours;
                }
                if let Some(mut kinds) = patch.file_kinds {
                    kinds.sort_unstable();
                    kinds.dedup();
                    settings.file_kinds = Some(kinds);
                }
                tx.update_site(tenant, &site)?;
                audit::record(tx, tenant, &by, now, Action::SiteUpdated, Some(id.0), details)?;
                Ok(site)
            })
            .await
    }

    /// A site with its installations, in one snapshot.
    pub async fn installations(&self, session: &Session, site: SiteId) -> Result<(Site, Vec<Installation>), DomainError> {
        let tenant = require_admin(session)?;
        self.db
            .read(move |r| {
                let found = r.site(tenant, site)?.ok_or(DomainError::NotFound)?;
                Ok((found, r.installations(SiteScope { tenant, site })?))
            })
            .await
    }

    /// Every site of the tenant with its installations, in one snapshot.
    pub async fn sites_with_installations(&self, session: &Session) -> Result<Vec<(Site, Vec<Installation>)>, DomainError> {
        let tenant = require_admin(session)?;
        self.db
            .read(move |r| {
                let sites = r.sites(tenant)?;
                let mut all = Vec::with_capacity(sites.len());
                for site in sites {
                    let installations = r.installations(SiteScope { tenant, site: site.id })?;
                    all.push((site, installations));
                }
                Ok(all)
            })
            .await
    }

    /// One installation of the tenant, with its site.
    pub async fn installation(&self, session: &Session, id: InstallationId) -> Result<(Installation, Site), DomainError> {
        let tenant = require_admin(session)?;
        self.db
            .read(move |r| {
                let installation = r.installation(tenant, id)?.ok_or(DomainError::NotFound)?;
                let site = r.site(tenant, installation.site_id)?.ok_or(DomainError::NotFound)?;
                Ok((installation, site))
            })
            .await
    }

    pub async fn create_installation(
        &self,
        session: &Session,
        site: SiteId,
        input: NewInstallationInput,
    ) -> Result<(Installation, Site), DomainError> {
        let tenant = require_admin(session)?;
        let found = self.db.read(move |r| r.site(tenant, site)?.ok_or(DomainError::NotFound)).await?;
        let name = input.name.unwrap_or_else(|| "Website".to_owned());
        let installation_type = input.installation_type.unwrap_or_else(|| "web".to_owned());
        let by = Some(Actor::of(session));
        let installation = self.tenancy.create_installation(SiteScope { tenant, site }, name, installation_type, by).await?;
        Ok((installation, found))
    }

    /// Enables or disables an installation; a change of its status emits
    /// `installation.health.changed`.
    pub async fn set_installation_enabled(
        &self,
        session: &Session,
        id: InstallationId,
        enabled: bool,
    ) -> Result<(Installation, Site), DomainError> {
        self.update_installation(session, id, InstallationPatch { enabled: Some(enabled), identity_required: None }).await
    }

    /// Applies what `patch` gives, in one transaction. Requiring identity
    /// needs a secret to identify visitors with.
    pub async fn update_installation(
        &self,
        session: &Session,
        id: InstallationId,
        patch: InstallationPatch,
    ) -> Result<(Installation, Site), DomainError> {
        let tenant = require_admin(session)?;
        let tenant_record = session.tenant.clone();
        let (by, now) = (Actor::of(session), self.clock.now());
        self.db
            .write(move |tx| {
                let mut installation = tx.installation(tenant, id)?.ok_or(DomainError::NotFound)?;
                let mut changed = serde_json::Map::new();
                let site = tx.site(tenant, installation.site_id)?.ok_or(DomainError::NotFound)?;
                if let Some(required) = patch.identity_required
                    && installation.identity.required != required
                {
                    if required && installation.identity.secret.is_none() {
                        return Err(DomainError::invalid(
                            "identity_required",
                            "make an identity secret first: without one no visitor can be identified",
                        ));
                    }
                    installation.identity.required = required;
                    tx.set_installation_identity(tenant, id, &installation.identity)?;
                    changed.insert("identity_required".into(), required.into());
                }
                let previous = installation.status();
                if let Some(enabled) = patch.enabled
                    && installation.enabled != enabled
                {
                    tx.set_installation_enabled(tenant, id, enabled)?;
                    installation.enabled = enabled;
                    let event = events::installation_health_changed(&tenant_record, &site, &installation, previous, now);
                    tx.insert_event(tenant, &event)?;
                    changed.insert("enabled".into(), enabled.into());
                }
                if !changed.is_empty() {
                    audit::record(tx, tenant, &by, now, Action::InstallationUpdated, Some(id.0), changed.into())?;
                }
                Ok((installation, site))
            })
            .await
    }

    /// Makes a new identity secret for the installation and returns it:
    /// the only time it is shown. The secret it replaces keeps checking
    /// for [`identity::ROTATION_OVERLAP`], so pages the site rendered
    /// before keep identifying their users while the site switches.
    ///
    /// `shown` is what a page showed of the secret (its [`identity_shown`]):
    /// the same form sent again (a reload of its answer) would otherwise
    /// end at once the secret the site has just switched to.
    pub async fn rotate_identity_secret(
        &self,
        session: &Session,
        id: InstallationId,
        shown: Option<String>,
    ) -> Result<(Installation, Site, String), DomainError> {
        let tenant = require_admin(session)?;
        let secret = ids::prefixed::<32>(identity::SECRET_PREFIX)?;
        let (by, now) = (Actor::of(session), self.clock.now());
        let until = now.plus(identity::ROTATION_OVERLAP);
        self.db
            .write(move |tx| {
                let mut installation = tx.installation(tenant, id)?.ok_or(DomainError::NotFound)?;
                let site = tx.site(tenant, installation.site_id)?.ok_or(DomainError::NotFound)?;
                if shown.is_some_and(|shown| shown != identity_shown(&installation)) {
                    return Err(DomainError::Conflict(
                        "the identity secret changed since the page was shown, so it was not replaced again",
                    ));
                }
                let settings = &mut installation.identity;
                settings.previous_secret = settings.secret.replace(secret.clone());
                settings.previous_secret_expires_at = settings.previous_secret.as_ref().map(|_| until);
                tx.set_installation_identity(tenant, id, settings)?;
                audit::record(tx, tenant, &by, now, Action::IdentitySecretRotated, Some(id.0), json!({}))?;
                Ok((installation, site, secret))
            })
            .await
    }

    pub async fn operators(&self, session: &Session) -> Result<Vec<Operator>, DomainError> {
        let tenant = require_admin(session)?;
        self.db.read(move |r| Ok(r.operators(tenant)?)).await
    }

    pub async fn create_operator(&self, session: &Session, input: NewOperatorInput) -> Result<Operator, DomainError> {
        let tenant = require_admin(session)?;
        let ids = input.site_ids.clone();
        self.db.read(move |r| check_sites(&r.sites(tenant)?, &ids)).await?;
        let by = Some(Actor::of(session));
        self.tenancy.create_operator(tenant, input, by).await.map_err(email_taken)
    }

    /// Changes an operator. Disabling it or changing its password revokes
    /// all its tokens in the same transaction. An admin cannot disable or
    /// demote itself, so a tenant always keeps the admin making changes.
    pub async fn update_operator(&self, session: &Session, id: OperatorId, patch: OperatorPatch) -> Result<Operator, DomainError> {
        let tenant = require_admin(session)?;
        if id == session.operator.id {
            let mut errors = FieldErrors::new();
            if patch.active == Some(false) {
                errors.add("active", "you cannot disable your own account");
            }
            if patch.role == Some(Role::Agent) {
                errors.add("role", "you cannot remove your own admin role");
            }
            if !errors.is_empty() {
                return Err(DomainError::Validation(errors));
            }
        }
        let password_hash = match patch.password {
            Some(p) => Some(password::hash(p).await?),
            None => None,
        };
        let (by, now) = (Actor::of(session), self.clock.now());
        self.db
            .write(move |tx| {
                tx.operator(tenant, id)?.ok_or(DomainError::NotFound)?;
                let mut details = serde_json::Map::new();
                if let Some(name) = &patch.name {
                    details.insert("name".into(), name.as_str().into());
                }
                if let Some(role) = patch.role {
                    details.insert("role".into(), role.as_str().into());
                }
                if let Some(active) = patch.active {
                    details.insert("active".into(), active.into());
                }
                if let Some(ids) = &patch.site_ids {
                    details.insert("site_ids".into(), ids.iter().map(|s| s.0).collect::<Vec<_>>().into());
                }
                if password_hash.is_some() {
                    details.insert("password".into(), "changed".into());
                }
                if let Some(ids) = &patch.site_ids {
                    check_sites(&tx.sites(tenant)?, ids)?;
                }
                let revoke = patch.active == Some(false) || password_hash.is_some();
                let changes = OperatorChanges {
                    name: patch.name,
                    role: patch.role,
                    active: patch.active,
                    password_hash,
                    site_ids: patch.site_ids,
                    ..OperatorChanges::default()
                };
                tx.update_operator(tenant, id, &changes)?;
                if revoke {
                    crate::account::end_credentials(tx, tenant, id, None, now)?;
                }
                audit::record(tx, tenant, &by, now, Action::OperatorUpdated, Some(id.0), details.into())?;
                tx.operator(tenant, id)?.ok_or(DomainError::NotFound)
            })
            .await
    }
}
