//! What tenant admins see.

use parley_domain::model::{Installation, Site};
use serde::Serialize;
use utoipa::ToSchema;

use super::mobile::UserView;
use super::widget::WidgetAppearanceView;
use super::{DateTime, at};

#[derive(Serialize, ToSchema)]
pub struct AdminSiteView {
    pub id: i64,
    pub name: String,
    pub domains: Vec<String>,
    pub widget: WidgetAppearanceView,
    pub created_at: DateTime,
}

impl From<&Site> for AdminSiteView {
    fn from(s: &Site) -> Self {
        let public = super::widget::SiteView::from(s);
        Self {
            id: s.id.0,
            name: public.name,
            domains: public.domains,
            widget: public.widget,
            created_at: at(s.created_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct AdminInstallationView {
    pub id: i64,
    pub site_id: i64,
    /// The public installation token of the embed snippet.
    pub token: String,
    pub name: String,
    pub installation_type: String,
    /// `pending`, `healthy`, `stale` or `disabled`.
    pub status: &'static str,
    pub enabled: bool,
    pub last_seen_at: Option<DateTime>,
    pub created_at: DateTime,
}

impl From<&Installation> for AdminInstallationView {
    fn from(i: &Installation) -> Self {
        Self {
            id: i.id.0,
            site_id: i.site_id.0,
            token: i.token.clone(),
            name: i.name.clone(),
            installation_type: i.installation_type.clone(),
            status: i.status().as_str(),
            enabled: i.enabled,
            last_seen_at: i.last_seen_at.map(at),
            created_at: at(i.created_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct SiteListResponse {
    pub sites: Vec<AdminSiteView>,
}

#[derive(Serialize, ToSchema)]
pub struct SiteResponse {
    pub site: AdminSiteView,
}

#[derive(Serialize, ToSchema)]
pub struct InstallationListResponse {
    pub installations: Vec<AdminInstallationView>,
}

#[derive(Serialize, ToSchema)]
pub struct InstallationCreatedResponse {
    pub installation: AdminInstallationView,
    /// The `<script>` element to paste into the site's pages.
    pub embed_snippet: String,
}

#[derive(Serialize, ToSchema)]
pub struct InstallationResponse {
    pub installation: AdminInstallationView,
}

#[derive(Serialize, ToSchema)]
pub struct OperatorListResponse {
    pub operators: Vec<UserView>,
}

#[derive(Serialize, ToSchema)]
pub struct OperatorResponse {
    pub operator: UserView,
}
