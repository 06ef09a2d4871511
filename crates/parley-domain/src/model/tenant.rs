use super::TenantId;
use crate::clock::Timestamp;

#[derive(Clone, Debug)]
pub struct Tenant {
    pub id: TenantId,
    /// Stable, URL-safe name; webhooks carry it as `tenant_slug`.
    pub slug: String,
    pub name: String,
    pub created_at: Timestamp,
}

#[derive(Clone, Debug)]
pub struct NewTenant {
    pub slug: String,
    pub name: String,
    pub created_at: Timestamp,
}
