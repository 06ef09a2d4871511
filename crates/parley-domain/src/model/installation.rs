use super::{InstallationId, SiteId, TenantId};
use crate::clock::Timestamp;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstallationStatus {
    /// No heartbeat received yet.
    Pending,
    Healthy,
    /// No heartbeat for `PARLEY_HEARTBEAT_STALE_AFTER`.
    Stale,
    /// Turned off by the tenant admin.
    Disabled,
}

impl InstallationStatus {
    pub const ALL: [InstallationStatus; 4] =
        [InstallationStatus::Pending, InstallationStatus::Healthy, InstallationStatus::Stale, InstallationStatus::Disabled];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Healthy => "healthy",
            Self::Stale => "stale",
            Self::Disabled => "disabled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "healthy" => Self::Healthy,
            "stale" => Self::Stale,
            "disabled" => Self::Disabled,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug)]
pub struct Installation {
    pub id: InstallationId,
    pub tenant_id: TenantId,
    pub site_id: SiteId,
    /// The public token the embed snippet carries.
    pub token: String,
    pub name: String,
    pub installation_type: String,
    pub enabled: bool,
    /// Heartbeat state, kept apart from `enabled` so re-enabling restores it.
    pub heartbeat_status: InstallationStatus,
    pub last_seen_at: Option<Timestamp>,
    pub widget_version: Option<String>,
    pub page_host: Option<String>,
    /// The installation type the widget last reported about itself.
    pub reported_type: Option<String>,
    pub created_at: Timestamp,
    /// How the site signs its users for this installation (see `identity`).
    pub identity: crate::identity::IdentitySettings,
}

impl Installation {
    pub fn status(&self) -> InstallationStatus {
        if self.enabled { self.heartbeat_status } else { InstallationStatus::Disabled }
    }
}

#[derive(Clone, Debug)]
pub struct NewInstallation {
    pub token: String,
    pub name: String,
    pub installation_type: String,
    pub created_at: Timestamp,
}

/// What one widget heartbeat reports.
#[derive(Clone, Debug)]
pub struct Heartbeat {
    pub at: Timestamp,
    pub version: Option<String>,
    pub page_host: Option<String>,
    pub installation_type: Option<String>,
}
