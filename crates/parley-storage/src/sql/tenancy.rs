//! Tenants, sites and installations.

use parley_domain::Timestamp;
use parley_domain::model::*;
use parley_domain::store::StoreResult;
use parley_domain::store::ops::{TenancyRead, TenancyWrite};

use super::{Row, Tx, args, statements};

pub(super) const TENANT_COLS: &str = "t.id AS t_id, t.slug AS t_slug, t.name AS t_name, t.created_at AS t_created_at";

pub(super) fn tenant(r: &dyn Row) -> StoreResult<Tenant> {
    Ok(Tenant { id: TenantId(r.i64("t_id")?), slug: r.string("t_slug")?, name: r.string("t_name")?, created_at: r.ts("t_created_at")? })
}

const SITE_COLS: &str = "s.id AS s_id, s.tenant_id AS s_tenant_id, s.name AS s_name, s.domains AS s_domains, \
     s.widget_title AS s_widget_title, s.widget_greeting AS s_widget_greeting, s.accent_color AS s_accent_color, \
     s.privacy_text AS s_privacy_text, s.privacy_url AS s_privacy_url, s.created_at AS s_created_at";

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
    })
}

const INSTALLATION_COLS: &str = "i.id AS i_id, i.tenant_id AS i_tenant_id, i.site_id AS i_site_id, i.token AS i_token, \
     i.name AS i_name, i.installation_type AS i_installation_type, i.enabled AS i_enabled, \
     i.heartbeat_status AS i_heartbeat_status, i.last_seen_at AS i_last_seen_at, i.widget_version AS i_widget_version, \
     i.page_host AS i_page_host, i.reported_type AS i_reported_type, i.created_at AS i_created_at";

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
    INSTALLATION_BY_TOKEN[Text](_) => format!("SELECT {TENANT_COLS}, {SITE_COLS}, {INSTALLATION_COLS} {CONTEXT_FROM} WHERE i.token = ?1"),
    STALE_CANDIDATES[Int, Int](d) => d.claim(format!(
        "SELECT {TENANT_COLS}, {SITE_COLS}, {INSTALLATION_COLS} {CONTEXT_FROM}
         WHERE i.heartbeat_status = 'healthy' AND i.last_seen_at < ?1
         ORDER BY i.last_seen_at LIMIT ?2"
    ), "i"),
    TENANT_BY_SLUG[Text](_) => format!("SELECT {TENANT_COLS} FROM tenants t WHERE t.slug = ?1"),
    TENANT[Int](_) => format!("SELECT {TENANT_COLS} FROM tenants t WHERE t.id = ?1"),
    SITES[Int](_) => format!("SELECT {SITE_COLS} FROM sites s WHERE s.tenant_id = ?1 ORDER BY s.id"),
    SITE[Int, Int](_) => format!("SELECT {SITE_COLS} FROM sites s WHERE s.tenant_id = ?1 AND s.id = ?2"),
    INSTALLATIONS[Int, Int](_) => format!("SELECT {INSTALLATION_COLS} FROM installations i WHERE i.tenant_id = ?1 AND i.site_id = ?2 ORDER BY i.id"),
    INSTALLATION[Int, Int](_) => format!("SELECT {INSTALLATION_COLS} FROM installations i WHERE i.tenant_id = ?1 AND i.id = ?2"),
    INSERT_TENANT[Text, Text, Int](_) => "INSERT INTO tenants (slug, name, created_at) VALUES (?1, ?2, ?3) RETURNING id".into(),
    INSERT_SITE[Int, Text, Text, Text, Text, Text, Text, Text, Int](_) => "INSERT INTO sites
         (tenant_id, name, domains, widget_title, widget_greeting, accent_color, privacy_text, privacy_url, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id".into(),
    INSERT_INSTALLATION[Int, Int, Text, Text, Text, Int](_) => "INSERT INTO installations (tenant_id, site_id, token, name, installation_type, created_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE EXISTS (SELECT 1 FROM sites WHERE id = ?2 AND tenant_id = ?1)
         RETURNING id".into(),
    SET_INSTALLATION_ENABLED[Int, Int, Bool](_) => "UPDATE installations SET enabled = ?3 WHERE tenant_id = ?1 AND id = ?2".into(),
    SET_HEARTBEAT_STATUS[Int, Int, Int, Text](_) => "UPDATE installations SET heartbeat_status = ?4 WHERE tenant_id = ?1 AND site_id = ?2 AND id = ?3".into(),
    RECORD_HEARTBEAT[Int, Int, Int, Int, Text, Text, Text, Text](_) => "UPDATE installations SET last_seen_at = ?4, heartbeat_status = ?5,
             widget_version = COALESCE(?6, widget_version),
             page_host = COALESCE(?7, page_host),
             reported_type = COALESCE(?8, reported_type)
         WHERE tenant_id = ?1 AND site_id = ?2 AND id = ?3".into(),
}

impl TenancyRead for Tx<'_> {
    fn installation_by_token(&mut self, token: &str) -> StoreResult<Option<InstallationContext>> {
        self.one(&INSTALLATION_BY_TOKEN, args![token], context)
    }

    fn tenant_by_slug(&mut self, slug: &str) -> StoreResult<Option<Tenant>> {
        self.one(&TENANT_BY_SLUG, args![slug], tenant)
    }

    fn tenant(&mut self, id: TenantId) -> StoreResult<Option<Tenant>> {
        self.one(&TENANT, args![id], tenant)
    }

    fn sites(&mut self, tenant: TenantId) -> StoreResult<Vec<Site>> {
        self.all(&SITES, args![tenant], site)
    }

    fn site(&mut self, tenant: TenantId, id: SiteId) -> StoreResult<Option<Site>> {
        self.one(&SITE, args![tenant, id], site)
    }

    fn installations(&mut self, scope: SiteScope) -> StoreResult<Vec<Installation>> {
        self.all(&INSTALLATIONS, args![scope.tenant, scope.site], installation)
    }

    fn installation(&mut self, tenant: TenantId, id: InstallationId) -> StoreResult<Option<Installation>> {
        self.one(&INSTALLATION, args![tenant, id], installation)
    }
}

impl TenancyWrite for Tx<'_> {
    fn stale_candidates(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<Vec<InstallationContext>> {
        self.all(&STALE_CANDIDATES, args![cutoff, limit], context)
    }

    fn insert_tenant(&mut self, t: &NewTenant) -> StoreResult<Tenant> {
        let id = self.insert(&INSERT_TENANT, args![&t.slug, &t.name, t.created_at])?;
        Ok(Tenant { id: TenantId(id), slug: t.slug.clone(), name: t.name.clone(), created_at: t.created_at })
    }

    fn insert_site(&mut self, tenant: TenantId, s: &NewSite) -> StoreResult<Site> {
        let domains = serde_json::to_string(&s.domains).map_err(|e| parley_domain::StoreError::Internal(e.to_string()))?;
        let a = &s.appearance;
        let id = self.insert(
            &INSERT_SITE,
            args![tenant, &s.name, &domains, &a.title, &a.greeting, &a.accent_color, &a.privacy_text, &a.privacy_url, s.created_at],
        )?;
        Ok(Site {
            id: SiteId(id),
            tenant_id: tenant,
            name: s.name.clone(),
            domains: s.domains.clone(),
            appearance: s.appearance.clone(),
            created_at: s.created_at,
        })
    }

    fn insert_installation(&mut self, scope: SiteScope, i: &NewInstallation) -> StoreResult<Installation> {
        let id =
            self.insert(&INSERT_INSTALLATION, args![scope.tenant, scope.site, &i.token, &i.name, &i.installation_type, i.created_at])?;
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
        })
    }

    fn set_installation_enabled(&mut self, tenant: TenantId, id: InstallationId, enabled: bool) -> StoreResult<()> {
        self.exec(&SET_INSTALLATION_ENABLED, args![tenant, id, enabled])?;
        self.effects.installations_changed = true;
        Ok(())
    }

    fn set_heartbeat_status(&mut self, scope: SiteScope, id: InstallationId, status: InstallationStatus) -> StoreResult<()> {
        self.exec(&SET_HEARTBEAT_STATUS, args![scope.tenant, scope.site, id, status.as_str()])?;
        Ok(())
    }

    fn record_heartbeat(&mut self, scope: SiteScope, id: InstallationId, h: &Heartbeat, status: InstallationStatus) -> StoreResult<()> {
        self.exec(
            &RECORD_HEARTBEAT,
            args![scope.tenant, scope.site, id, h.at, status.as_str(), &h.version, &h.page_host, &h.installation_type],
        )?;
        Ok(())
    }
}
