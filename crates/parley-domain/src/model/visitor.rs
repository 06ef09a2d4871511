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
    /// How the visitor verified; changing the verified email or phone
    /// clears the verification.
    pub verified_method: Option<crate::verification::Method>,
    /// The email address or phone number the verification proved.
    pub verified_target: Option<String>,
    /// The site's own id of its signed-in user, once the page identified
    /// the visitor with a valid signature: one visitor per user and site.
    pub user_id: Option<String>,
    /// The email address the site vouched for in a signed token.
    pub site_email: Option<String>,
    /// What the page told about the visitor with `Parley('set')`.
    pub attributes: crate::identity::Attributes,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// What a completed verification proved about a visitor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proof {
    pub method: crate::verification::Method,
    /// The email address or phone number proven.
    pub target: String,
    /// The profile's email is the proven address. A visitor verified by
    /// SMS may still type any email: that one is not.
    pub email: bool,
    /// The profile's phone is the proven number.
    pub phone: bool,
}

impl Visitor {
    /// Who proved the visitor's email: `verification` (Parley's own code
    /// or link; the stronger word), `site` (a signed identity token named
    /// it), or nobody.
    pub fn email_proven_by(&self) -> Option<&'static str> {
        if self.proof().is_some_and(|p| p.email) {
            return Some("verification");
        }
        match (&self.profile.email, &self.site_email) {
            (Some(email), Some(vouched)) if crate::validate::same_email(email, vouched) => Some("site"),
            _ => None,
        }
    }

    /// What the visitor's verification proved, if it verified.
    pub fn proof(&self) -> Option<Proof> {
        let (method, target) = (self.verified_method?, self.verified_target.clone()?);
        self.verified_at?;
        let email = !method.uses_phone() && self.profile.email.as_deref().is_some_and(|e| crate::validate::same_email(&target, e));
        let phone = method.uses_phone() && self.profile.phone.as_deref() == Some(target.as_str());
        Some(Proof { method, target, email, phone })
    }
}

/// The fields a visitor may tell about itself. `None` means "not told";
/// a synchronisation only overwrites what it tells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VisitorProfile {
    pub name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub last_url: Option<String>,
    /// The language the widget speaks to the visitor (one of
    /// `locale::LANGUAGES`): what the server writes to it is in it.
    pub locale: Option<String>,
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
            (&mut self.locale, &update.locale),
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
