//! The tenant administration API's requests.

use parley_domain::admin::{InstallationPatch, NewInstallationInput, NewOperatorInput, OperatorPatch, SitePatch};
use parley_domain::auth::{MAX_PERSONAL_TOKEN_DAYS, NewPersonalToken};
use parley_domain::canned::{CannedPatch, CannedText};
use parley_domain::events::EventKind;
use parley_domain::model::{Role, SiteId, WidgetAppearance};
use parley_domain::tenancy::NewSiteInput;
use parley_domain::validate;
use parley_domain::verification::channels::Channel;
use parley_domain::webhooks::service::NewWebhookInput;
use utoipa::ToSchema;

use super::schema;
use super::values::{EventKinds, Hours, SiteLocale, SiteTextsByLanguage, TokenDays, WebhookUrl};
use crate::extract::{Fields, FromFields, Invalid, Shape};

#[derive(ToSchema, FromFields)]
pub struct SiteCreateRequest {
    /// At most 255 characters, not blank.
    name: schema::RequiredName,
    /// Host names the widget may run on (subdomains included). Empty or absent: anywhere.
    domains: Option<Vec<schema::Domain>>,
    /// Widget title; defaults to the site name.
    widget_title: Option<schema::Name>,
    widget_greeting: Option<schema::LongText>,
    /// `#rrggbb`; default `#2563eb`.
    accent_color: Option<schema::Colour>,
    privacy_text: Option<schema::LongText>,
    privacy_url: Option<schema::PageUrl>,
}

impl From<SiteCreateRequest> for NewSiteInput {
    fn from(r: SiteCreateRequest) -> Self {
        let name = r.name.0;
        Self {
            domains: r.domains.unwrap_or_default().into_iter().map(|d| d.0).collect(),
            appearance: WidgetAppearance {
                title: r.widget_title.map_or_else(|| name.clone(), |t| t.0),
                greeting: r.widget_greeting.map_or_else(|| "Hi! How can we help?".to_owned(), |t| t.0),
                accent_color: r.accent_color.map_or_else(|| "#2563eb".to_owned(), |c| c.0),
                privacy_text: r.privacy_text.map_or_else(|| "We keep your messages to answer you.".to_owned(), |t| t.0),
                privacy_url: r.privacy_url.map(|u| u.0.url),
            },
            name,
        }
    }
}

/// What changes of a site: its name and domains, the widget's look and
/// texts, language, texts per language, business hours and file kinds;
/// what is left out stays.
#[derive(ToSchema, FromFields)]
pub struct SitePatchRequest {
    name: Option<schema::RequiredName>,
    /// Replaces the list; an empty list lets the widget run anywhere.
    domains: Option<Vec<schema::Domain>>,
    widget_title: Option<schema::Name>,
    widget_greeting: Option<schema::LongText>,
    /// `#rrggbb`.
    accent_color: Option<schema::Colour>,
    privacy_text: Option<schema::LongText>,
    /// Empty (`""`) removes the link.
    privacy_url: Option<schema::PageUrlOrEmpty>,
    #[schema(schema_with = schema::site_locale)]
    locale: Option<SiteLocale>,
    #[schema(schema_with = schema::site_texts)]
    texts: Option<SiteTextsByLanguage>,
    #[schema(schema_with = schema::business_hours)]
    business_hours: Option<Hours>,
    /// The kinds of file visitors and operators may attach (an empty list:
    /// none). The default is images, pdf, text and office.
    attachment_types: Option<Vec<schema::FileKindName>>,
}

impl SitePatchRequest {
    pub fn patch(self) -> Result<SitePatch, parley_domain::DomainError> {
        let look = [self.widget_title.is_none(), self.widget_greeting.is_none(), self.accent_color.is_none(), self.privacy_text.is_none()];
        let settings = [self.locale.is_none(), self.texts.is_none(), self.business_hours.is_none(), self.attachment_types.is_none()];
        let named = [self.name.is_none(), self.domains.is_none(), self.privacy_url.is_none()];
        if look.into_iter().chain(settings).chain(named).all(|absent| absent) {
            return Err(parley_domain::DomainError::invalid("locale", "give at least one field to change"));
        }
        Ok(SitePatch {
            name: self.name.map(|n| n.0),
            domains: self.domains.map(|list| list.into_iter().map(|d| d.0).collect()),
            title: self.widget_title.map(|t| t.0),
            greeting: self.widget_greeting.map(|t| t.0),
            accent_color: self.accent_color.map(|c| c.0),
            privacy_text: self.privacy_text.map(|t| t.0),
            privacy_url: self.privacy_url.map(|u| u.0),
            locale: self.locale.map(|l| l.0),
            texts: self.texts.map(|t| t.0),
            hours: self.business_hours.map(|h| h.0),
            file_kinds: self.attachment_types.map(|list| list.into_iter().map(|k| k.0).collect()),
        })
    }
}

#[derive(ToSchema, FromFields)]
pub struct InstallationCreateRequest {
    /// Default `Website`.
    name: Option<schema::Name>,
    /// Default `web`.
    installation_type: Option<schema::ShortText>,
}

impl From<InstallationCreateRequest> for NewInstallationInput {
    fn from(r: InstallationCreateRequest) -> Self {
        Self { name: r.name.map(|n| n.0), installation_type: r.installation_type.map(|t| t.0) }
    }
}

/// At least one of the two.
#[derive(ToSchema, FromFields)]
pub struct InstallationPatchRequest {
    pub enabled: Option<bool>,
    /// Refuse visitors the page has not identified (401
    /// `identity_required`). Needs an identity secret.
    pub identity_required: Option<bool>,
}

impl InstallationPatchRequest {
    pub fn patch(&self) -> Result<InstallationPatch, parley_domain::DomainError> {
        if self.enabled.is_none() && self.identity_required.is_none() {
            return Err(parley_domain::DomainError::invalid("enabled", "give enabled, identity_required or both"));
        }
        Ok(InstallationPatch { enabled: self.enabled, identity_required: self.identity_required })
    }
}

#[derive(ToSchema, FromFields)]
pub struct OperatorCreateRequest {
    /// Unique across the service, compared without regard to case.
    email: schema::Email,
    name: schema::RequiredName,
    /// 10 to 1,024 characters.
    password: schema::NewPassword,
    #[schema(schema_with = schema::role)]
    role: Role,
    /// Sites of this tenant whose conversations an agent sees.
    #[schema(schema_with = schema::site_ids)]
    site_ids: Option<Vec<SiteId>>,
}

impl From<OperatorCreateRequest> for NewOperatorInput {
    fn from(r: OperatorCreateRequest) -> Self {
        Self { email: r.email.0, name: r.name.0, password: r.password.0, role: r.role, site_ids: r.site_ids.unwrap_or_default() }
    }
}

/// An operator to invite: it gets an email with a link to choose its
/// password.
#[derive(ToSchema, FromFields)]
pub struct OperatorInviteRequest {
    /// Unique across the service, compared without regard to case.
    email: schema::Email,
    name: schema::RequiredName,
    #[schema(schema_with = schema::role)]
    role: Role,
    /// Sites of this tenant whose conversations an agent sees.
    #[schema(schema_with = schema::site_ids)]
    site_ids: Option<Vec<SiteId>>,
}

impl From<OperatorInviteRequest> for parley_domain::invitations::InviteInput {
    fn from(r: OperatorInviteRequest) -> Self {
        Self { email: r.email.0, name: r.name.0, role: r.role, site_ids: r.site_ids.unwrap_or_default() }
    }
}

/// Every field is optional; only those sent change. Disabling an operator
/// or changing its password signs it out everywhere.
#[derive(ToSchema, FromFields)]
pub struct OperatorPatchRequest {
    name: Option<schema::RequiredName>,
    password: Option<schema::NewPassword>,
    #[schema(schema_with = schema::optional_role)]
    role: Option<Role>,
    active: Option<bool>,
    #[schema(schema_with = schema::site_ids)]
    site_ids: Option<Vec<SiteId>>,
}

impl From<OperatorPatchRequest> for OperatorPatch {
    fn from(r: OperatorPatchRequest) -> Self {
        Self { name: r.name.map(|n| n.0), password: r.password.map(|p| p.0), role: r.role, active: r.active, site_ids: r.site_ids }
    }
}

#[derive(ToSchema, FromFields)]
pub struct WebhookCreateRequest {
    /// Described by `schema::webhook_url`.
    #[schema(schema_with = schema::webhook_url)]
    pub url: WebhookUrl,
    /// Kinds to receive, at least one; all kinds when absent.
    #[schema(schema_with = schema::event_kinds)]
    pub events: Option<EventKinds>,
}

impl From<WebhookCreateRequest> for NewWebhookInput {
    fn from(r: WebhookCreateRequest) -> Self {
        Self { url: r.url.0, events: r.events.map(|e| e.0) }
    }
}

#[derive(ToSchema, FromFields)]
pub struct WebhookTestRequest {
    /// The kind of event to send.
    #[schema(schema_with = schema::event_kind)]
    pub event: EventKind,
}

#[derive(ToSchema, FromFields)]
pub struct PersonalTokenCreateRequest {
    /// What the token is for: at most 255 characters, not blank.
    name: schema::RequiredName,
    /// Days until it expires, 1 to 365; 30 when absent.
    #[schema(schema_with = personal_token_days)]
    expires_in_days: Option<TokenDays>,
}

/// 1 to 365; null counts as not given, as for every optional field.
fn personal_token_days() -> utoipa::openapi::Object {
    schema::nullable_bounded_integer(1, i64::from(MAX_PERSONAL_TOKEN_DAYS))
}

/// Days a personal token lives when the request does not say.
const DEFAULT_PERSONAL_TOKEN_DAYS: u32 = 30;

impl From<PersonalTokenCreateRequest> for NewPersonalToken {
    fn from(r: PersonalTokenCreateRequest) -> Self {
        Self { name: r.name.0, expires_in_days: r.expires_in_days.map_or(DEFAULT_PERSONAL_TOKEN_DAYS, |d| d.0) }
    }
}

/// `{"channel": "email", "to": an email address}` or `{"channel": "sms",
/// "to": an E.164 number}`: one variant per channel, so the document
/// states which `to` each takes.
/// Read by hand: which `to` is valid depends on `channel`.
pub struct ChannelTestRequest {
    pub channel: Channel,
    pub to: String,
}

impl utoipa::PartialSchema for ChannelTestRequest {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder};
        let variant = |channel: &str, rule: &validate::Rule, what: &str| {
            ObjectBuilder::new()
                .property("channel", schema::one_of(&[channel], false))
                .required("channel")
                .property("to", ObjectBuilder::from(schema::rule(rule, false)).description(Some(what)))
                .required("to")
                .build()
        };
        let one_of = OneOfBuilder::new()
            .description(Some("A test message through one channel, to an address of its kind."))
            .item(variant("email", &validate::EMAIL, "An email address"))
            .item(variant("sms", &validate::PHONE, "A phone number in E.164 form (+4915123456789)"))
            .build();
        utoipa::openapi::RefOr::T(utoipa::openapi::schema::Schema::OneOf(one_of))
    }
}

impl ToSchema for ChannelTestRequest {}

impl FromFields for ChannelTestRequest {
    const FIELDS: &'static [(&'static str, Shape)] = &[("channel", Shape::Text), ("to", Shape::Text)];

    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let channel = f.required("channel", |s| Channel::parse(s).ok_or_else(|| "must be email or sms".to_owned()));
        let to = match &channel {
            Ok(Channel::Sms) => f.required("to", validate::phone),
            Ok(Channel::Email) => f.required("to", validate::email),
            Err(_) => f.required("to", |s| Ok(s.to_owned())),
        };
        Ok(Self { channel: channel?, to: to? })
    }
}

/// A canned response to add.
#[derive(ToSchema, FromFields)]
pub struct CannedResponseCreateRequest {
    shortcut: schema::Shortcut,
    /// The text the reply box takes in.
    body: schema::MessageBody,
}

impl From<CannedResponseCreateRequest> for CannedText {
    fn from(r: CannedResponseCreateRequest) -> Self {
        Self { shortcut: r.shortcut.0, body: r.body.0 }
    }
}

/// What changes of a canned response; what is left out stays.
#[derive(ToSchema, FromFields)]
pub struct CannedResponsePatchRequest {
    shortcut: Option<schema::Shortcut>,
    body: Option<schema::MessageBody>,
}

impl CannedResponsePatchRequest {
    pub fn patch(self) -> Result<CannedPatch, parley_domain::DomainError> {
        if self.shortcut.is_none() && self.body.is_none() {
            return Err(parley_domain::DomainError::invalid("shortcut", "give shortcut, body or both"));
        }
        Ok(CannedPatch { shortcut: self.shortcut.map(|s| s.0), body: self.body.map(|b| b.0) })
    }
}
