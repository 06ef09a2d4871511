//! Tenants, sites and installations.

use parley_domain::Timestamp;
use parley_domain::identity::IdentitySettings;
use parley_domain::model::*;
use parley_domain::store::StoreResult;
use parley_domain::store::ops::{TenancyRead, TenancyWrite};

use super::row::to_json;
use super::{Row, Tx, statements};

pub(super) const TENANT_COLS: &str = "t.id AS t_id, t.slug AS t_slug, t.name AS t_name, t.created_at AS t_created_at";

pub(super) fn tenant(r: &dyn Row) -> StoreResult<Tenant> {
    Ok(Tenant { id: TenantId(r.i64("t_id")?), slug: r.string("t_slug")?, name: r.string("t_name")?, created_at: r.ts("t_created_at")? })
}

const SITE_COLS: &str = "s.id AS s_id, s.tenant_id AS s_tenant_id, s.name AS s_name, s.domains AS s_domains, \
     s.widget_title AS s_widget_title, s.widget_greeting AS s_widget_greeting, s.accent_color AS s_accent_color, \
     s.privacy_text AS s_privacy_text, s.privacy_url AS s_privacy_url, s.created_at AS s_created_at, \
     s.locale AS s_locale, s.texts AS s_texts, s.business_hours AS s_business_hours, s.attachment_types AS s_attachment_types";

fn site(r: &dyn Row) -> StoreResult<Site> {
    Ok(Site {
        id: SiteId(r.i64("s_id")?),
        tenant_id: TenantId(r.i64("s_tenant_id")?),
        name: r.string("s_name")?,
        domains: r.json("s_domains")?,
        appearance: WidgetAppearance {
            title: r.string("s_widget_title")?,
            greeting: r.string("s_widget_greeting")?,
            accent_color: r.string("s_accent_color")?,
            privacy_text: r.string("s_privacy_text")?,
            privacy_url: r.text("s_privacy_url")?,
        },
        created_at: r.ts("s_created_at")?,
        settings: SiteSettings {
            locale: r.text("s_locale")?,
            texts: r.opt_json("s_texts")?.unwrap_or_default(),
            hours: r.opt_json("s_business_hours")?,
            file_kinds: r.opt_json("s_attachment_types")?,
        },
    })
}

const INSTALLATION_COLS: &str = "i.id AS i_id, i.tenant_id AS i_tenant_id, i.site_id AS i_site_id, i.token AS i_token, \
     i.name AS i_name, i.installation_type AS i_installation_type, i.enabled AS i_enabled, \
     i.heartbeat_status AS i_heartbeat_status, i.last_seen_at AS i_last_seen_at, i.widget_version AS i_widget_version, \
     i.page_host AS i_page_host, i.reported_type AS i_reported_type, i.created_at AS i_created_at, \
     i.identity_secret AS i_identity_secret, i.previous_identity_secret AS i_previous_identity_secret, \
     i.previous_identity_secret_expires_at AS i_previous_identity_secret_expires_at, i.identity_required AS i_identity_required";

fn installation(r: &dyn Row) -> StoreResult<Installation> {
    Ok(Installation {
        id: InstallationId(r.i64("i_id")?),
        tenant_id: TenantId(r.i64("i_tenant_id")?),
        site_id: SiteId(r.i64("i_site_id")?),
        token: r.string("i_token")?,
        name: r.string("i_name")?,
        installation_type: r.string("i_installation_type")?,
        enabled: r.flag("i_enabled")?,
        heartbeat_status: r.parsed("i_heartbeat_status", InstallationStatus::parse)?,
        last_seen_at: r.opt_ts("i_last_seen_at")?,
        widget_version: r.text("i_widget_version")?,
        page_host: r.text("i_page_host")?,
        reported_type: r.text("i_reported_type")?,
        created_at: r.ts("i_created_at")?,
        identity: IdentitySettings {
            secret: r.text("i_identity_secret")?,
            previous_secret: r.text("i_previous_identity_secret")?,
            previous_secret_expires_at: r.opt_ts("i_previous_identity_secret_expires_at")?,
            required: r.flag("i_identity_required")?,
        },
    })
}

fn context(r: &dyn Row) -> StoreResult<InstallationContext> {
    Ok(InstallationContext { tenant: tenant(r)?, site: site(r)?, installation: installation(r)? })
}

/// An installation with its site and tenant.
const CONTEXT_FROM: &str = "FROM installations i
     JOIN sites s ON s.id = i.site_id AND s.tenant_id = i.tenant_id
     JOIN tenants t ON t.id = i.tenant_id";

statements! {
    INSTALLATION_BY_TOKEN<'a>(token: &'a str) => |_|
        format!("SELECT {TENANT_COLS}, {SITE_COLS}, {INSTALLATION_COLS} {CONTEXT_FROM} WHERE i.token = :token"),
    STALE_CANDIDATES(cutoff: Timestamp, limit: u32) => |d| d.claim(format!(
        "SELECT {TENANT_COLS}, {SITE_COLS}, {INSTALLATION_COLS} {CONTEXT_FROM}
         WHERE i.heartbeat_status = 'healthy' AND i.last_seen_at < :cutoff
         ORDER BY i.last_seen_at LIMIT :limit"
    ), "i"),
    TENANT_BY_SLUG<'a>(slug: &'a str) => |_| format!("SELECT {TENANT_COLS} FROM tenants t WHERE t.slug = :slug"),
    TENANT(id: TenantId) => |_| format!("SELECT {TENANT_COLS} FROM tenants t WHERE t.id = :id"),
    UPDATE_SITE<'a>(
        tenant: TenantId, id: SiteId, name: &'a str, domains: &'a str, title: &'a str, greeting: &'a str, accent_color: &'a str,
        privacy_text: &'a str, privacy_url: Option<&'a str>, locale: Option<&'a str>, texts: Option<&'a str>, hours: Option<&'a str>,
        file_kinds: Option<&'a str>,
    ) => |_| "UPDATE sites SET name = :name, domains = :domains, widget_title = :title, widget_greeting = :greeting,
             accent_color = :accent_color, privacy_text = :privacy_text, privacy_url = :privacy_url,
             locale = :locale, texts = :texts, business_hours = :hours, attachment_types = :file_kinds
         WHERE tenant_id = :tenant AND id = :id".into(),
    SITES(tenant: TenantId) => |_| format!("SELECT {SITE_COLS} FROM sites s WHERE s.tenant_id = :tenant ORDER BY s.id"),
    SITE(tenant: TenantId, id: SiteId) => |_| format!("SELECT {SITE_COLS} FROM sites s WHERE s.tenant_id = :tenant AND s.id = :id"),
    /// The site held until the unit ends: changes read it whole and write
    /// it whole, so two at once must not overlap.
    SITE_FOR_UPDATE(tenant: TenantId, id: SiteId) => |d|
        d.locked(format!("SELECT {SITE_COLS} FROM sites s WHERE s.tenant_id = :tenant AND s.id = :id")),
    INSTALLATIONS(tenant: TenantId, site: SiteId) => |_|
        format!("SELECT {INSTALLATION_COLS} FROM installations i WHERE i.tenant_id = :tenant AND i.site_id = :site ORDER BY i.id"),
    INSTALLATION(tenant: TenantId, id: InstallationId) => |_|
        format!("SELECT {INSTALLATION_COLS} FROM installations i WHERE i.tenant_id = :tenant AND i.id = :id"),
    INSERT_TENANT<'a>(slug: &'a str, name: &'a str, created_at: Timestamp) => |_|
        "INSERT INTO tenants (slug, name, created_at) VALUES (:slug, :name, :created_at) RETURNING id".into(),
    INSERT_SITE<'a>(
        tenant: TenantId, name: &'a str, domains: &'a str, title: &'a str, greeting: &'a str, accent_color: &'a str,
        privacy_text: &'a str, privacy_url: Option<&'a str>, created_at: Timestamp,
    ) => |_| "INSERT INTO sites
         (tenant_id, name, domains, widget_title, widget_greeting, accent_color, privacy_text, privacy_url, created_at)
         VALUES (:tenant, :name, :domains, :title, :greeting, :accent_color, :privacy_text, :privacy_url, :created_at) RETURNING id".into(),
    INSERT_INSTALLATION<'a>(
        tenant: TenantId, site: SiteId, token: &'a str, name: &'a str, installation_type: &'a str, created_at: Timestamp,
    ) => |_| "INSERT INTO installations (tenant_id, site_id, token, name, installation_type, created_at)
         SELECT :tenant, :site, :token, :name, :installation_type, :created_at
         WHERE EXISTS (SELECT 1 FROM sites WHERE id = :site AND tenant_id = :tenant)
         RETURNING id".into(),
    SET_INSTALLATION_ENABLED(tenant: TenantId, id: InstallationId, enabled: bool) => |_|
        "UPDATE installations SET enabled = :enabled WHERE tenant_id = :tenant AND id = :id".into(),
    SET_INSTALLATION_IDENTITY<'a>(
        tenant: TenantId, id: InstallationId, secret: Option<&'a str>, previous_secret: Option<&'a str>,
        previous_expires_at: Option<Timestamp>, required: bool,
    ) => |_| "UPDATE installations SET identity_secret = :secret, previous_identity_secret = :previous_secret,
         previous_identity_secret_expires_at = :previous_expires_at, identity_required = :required
         WHERE tenant_id = :tenant AND id = :id".into(),
    SET_HEARTBEAT_STATUS<'a>(tenant: TenantId, site: SiteId, id: InstallationId, status: &'a str) => |_|
        "UPDATE installations SET heartbeat_status = :status WHERE tenant_id = :tenant AND site_id = :site AND id = :id".into(),
    RECORD_HEARTBEAT<'a>(
        tenant: TenantId, site: SiteId, id: InstallationId, at: Timestamp, status: &'a str,
        version: Option<&'a str>, page_host: Option<&'a str>, installation_type: Option<&'a str>,
    ) => |_| "UPDATE installations SET last_seen_at = :at, heartbeat_status = :status,
             widget_version = COALESCE(:version, widget_version),
             page_host = COALESCE(:page_host, page_host),
             reported_type = COALESCE(:installation_type, reported_type)
         WHERE tenant_id = :tenant AND site_id = :site AND id = :id".into(),
}

impl TenancyRead for Tx<'_> {
    fn installation_by_token(&mut self, token: &str) -> StoreResult<Option<InstallationContext>> {
        self.one(INSTALLATION_BY_TOKEN { token }, context)
    }

    fn tenant_by_slug(&mut self, slug: &str) -> StoreResult<Option<Tenant>> {
        self.one(TENANT_BY_SLUG { slug }, tenant)
    }

    fn tenant(&mut self, id: TenantId) -> StoreResult<Option<Tenant>> {
        self.one(TENANT { id }, tenant)
    }

    fn sites(&mut self, tenant: TenantId) -> StoreResult<Vec<Site>> {
        self.all(SITES { tenant }, site)
    }

    fn site(&mut self, tenant: TenantId, id: SiteId) -> StoreResult<Option<Site>> {
        self.one(SITE { tenant, id }, site)
    }

    fn installations(&mut self, scope: SiteScope) -> StoreResult<Vec<Installation>> {
        self.all(INSTALLATIONS { tenant: scope.tenant, site: scope.site }, installation)
    }

    fn installation(&mut self, tenant: TenantId, id: InstallationId) -> StoreResult<Option<Installation>> {
        self.one(INSTALLATION { tenant, id }, installation)
    }
}

impl TenancyWrite for Tx<'_> {
    fn stale_candidates(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<Vec<InstallationContext>> {
        self.all(STALE_CANDIDATES { cutoff, limit }, context)
    }

    fn insert_tenant(&mut self, t: &NewTenant) -> StoreResult<Tenant> {
        let id = self.insert(INSERT_TENANT { slug: &t.slug, name: &t.name, created_at: t.created_at })?;
        Ok(Tenant { id: TenantId(id), slug: t.slug.clone(), name: t.name.clone(), created_at: t.created_at })
    }

    fn insert_site(&mut self, tenant: TenantId, s: &NewSite) -> StoreResult<Site> {
        let domains = to_json(&s.domains)?;
        let a = &s.appearance;
        let id = self.insert(INSERT_SITE {
            tenant,
            name: &s.name,
            domains: &domains,
            title: &a.title,
            greeting: &a.greeting,
            accent_color: &a.accent_color,
            privacy_text: &a.privacy_text,
            privacy_url: a.privacy_url.as_deref(),
            created_at: s.created_at,
        })?;
        Ok(Site {
            id: SiteId(id),
            tenant_id: tenant,
            name: s.name.clone(),
            domains: s.domains.clone(),
            appearance: s.appearance.clone(),
            created_at: s.created_at,
            settings: SiteSettings::default(),
        })
    }

    fn insert_installation(&mut self, scope: SiteScope, i: &NewInstallation) -> StoreResult<Installation> {
        let id = self.insert(INSERT_INSTALLATION {
            tenant: scope.tenant,
            site: scope.site,
            token: &i.token,
            name: &i.name,
            installation_type: &i.installation_type,
            created_at: i.created_at,
        })?;
        Ok(Installation {
            id: InstallationId(id),
            tenant_id: scope.tenant,
            site_id: scope.site,
            token: i.token.clone(),
            name: i.name.clone(),
            installation_type: i.installation_type.clone(),
            enabled: true,
            heartbeat_status: InstallationStatus::Pending,
            last_seen_at: None,
            widget_version: None,
            page_host: None,
            reported_type: None,
            created_at: i.created_at,
            identity: IdentitySettings::default(),
        })
    }

    fn lock_site(&mut self, tenant: TenantId, id: SiteId) -> StoreResult<Option<Site>> {
        self.one(SITE_FOR_UPDATE { tenant, id }, site)
    }

    fn update_site(&mut self, tenant: TenantId, site: &Site) -> StoreResult<()> {
        let settings = &site.settings;
        let texts = if settings.texts.is_empty() { None } else { Some(to_json(&settings.texts)?) };
        let hours = settings.hours.as_ref().map(to_json).transpose()?;
        let file_kinds = settings.file_kinds.as_ref().map(to_json).transpose()?;
        let (domains, a) = (to_json(&site.domains)?, &site.appearance);
        self.exec(UPDATE_SITE {
            tenant,
            id: site.id,
            name: &site.name,
            domains: &domains,
            title: &a.title,
            greeting: &a.greeting,
            accent_color: &a.accent_color,
            privacy_text: &a.privacy_text,
            privacy_url: a.privacy_url.as_deref(),
            locale: settings.locale.as_deref(),
            texts: texts.as_deref(),
            hours: hours.as_deref(),
            file_kinds: file_kinds.as_deref(),
        })?;
        // The widget's configuration comes through the token cache.
        self.effects.installations_changed = true;
        Ok(())
    }

    fn set_installation_identity(&mut self, tenant: TenantId, id: InstallationId, identity: &IdentitySettings) -> StoreResult<()> {
        self.exec(SET_INSTALLATION_IDENTITY {
            tenant,
            id,
            secret: identity.secret.as_deref(),
            previous_secret: identity.previous_secret.as_deref(),
            previous_expires_at: identity.previous_secret_expires_at,
            required: identity.required,
        })?;
        // Tokens resolve from a cache that this invalidates.
        self.effects.installations_changed = true;
        Ok(())
    }

    fn set_installation_enabled(&mut self, tenant: TenantId, id: InstallationId, enabled: bool) -> StoreResult<()> {
        self.exec(SET_INSTALLATION_ENABLED { tenant, id, enabled })?;
        self.effects.installations_changed = true;
        Ok(())
    }

    fn set_heartbeat_status(&mut self, scope: SiteScope, id: InstallationId, status: InstallationStatus) -> StoreResult<()> {
        self.exec(SET_HEARTBEAT_STATUS { tenant: scope.tenant, site: scope.site, id, status: status.as_str() })?;
        Ok(())
    }

    fn record_heartbeat(&mut self, scope: SiteScope, id: InstallationId, h: &Heartbeat, status: InstallationStatus) -> StoreResult<()> {
        self.exec(RECORD_HEARTBEAT {
            tenant: scope.tenant,
            site: scope.site,
            id,
            at: h.at,
            status: status.as_str(),
            version: h.version.as_deref(),
            page_host: h.page_host.as_deref(),
            installation_type: h.installation_type.as_deref(),
        })?;
        Ok(())
    }
}
