use super::{SiteId, TenantId, VisitorId};
use crate::clock::Timestamp;

#[derive(Clone, Debug)]
pub struct Visitor {
    pub id: VisitorId,
    pub tenant_id: TenantId,
    pub site_id: SiteId,
    /// Chosen by the widget and kept in the browser; unique per site.
    pub uuid: String,
    pub profile: VisitorProfile,
    pub verified_at: Option<Timestamp>,
    /// How the visitor verified; the verified email or phone is the one in
    /// the profile, and changing it clears the verification.
    pub verified_method: Option<crate::verification::Method>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// The fields a visitor may tell about itself. `None` means "not told";
/// a synchronisation only overwrites what it tells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VisitorProfile {
    pub name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub last_url: Option<String>,
}

impl VisitorProfile {
    /// Applies what `update` tells; returns whether anything changed.
    pub fn merge(&mut self, update: &VisitorProfile) -> bool {
        let before = self.clone();
        for (mine, theirs) in [
            (&mut self.name, &update.name),
            (&mut self.email, &update.email),
            (&mut self.phone, &update.phone),
            (&mut self.last_url, &update.last_url),
        ] {
            if theirs.is_some() {
                mine.clone_from(theirs);
            }
        }
        *self != before
    }
}

#[derive(Clone, Debug)]
pub struct NewVisitor {
    pub uuid: String,
    pub profile: VisitorProfile,
    pub created_at: Timestamp,
}
