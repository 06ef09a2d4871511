//! The tenant administration API's requests.
#![allow(dead_code)]

use parley_domain::admin::{NewInstallationInput, NewOperatorInput, OperatorPatch};
use parley_domain::auth::{MAX_PERSONAL_TOKEN_DAYS, NewPersonalToken};
use parley_domain::events::EventKind;
use parley_domain::model::{Role, SiteId, WidgetAppearance};
use parley_domain::tenancy::NewSiteInput;
use parley_domain::validate;
use parley_domain::verification::channels::Channel;
use serde_json::Value;
use utoipa::ToSchema;

use super::schema;
use crate::extract::{Fields, FromFields, Invalid, positive_id};

#[derive(ToSchema)]
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

fn text(s: &str) -> Result<Option<String>, String> {
    validate::optional(&validate::LONG_TEXT, s)
}

fn site_id(v: &Value) -> Result<SiteId, String> {
    positive_id(v).map(SiteId).ok_or_else(|| "must be a positive integer id".into())
}

fn role(s: &str) -> Result<Role, String> {
    Role::parse(s).ok_or_else(|| "must be admin or agent".into())
}

impl FromFields for NewSiteInput {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let name = f.required("name", validate::required_name);
        let domains = f.optional_list("domains", |v| v.as_str().ok_or_else(|| "must be a string".to_owned()).and_then(validate::domain));
        let title = f.optional_text("widget_title", validate::name);
        let greeting = f.optional_text("widget_greeting", text);
        let accent = f.optional("accent_color", validate::colour);
        let privacy_text = f.optional_text("privacy_text", text);
        let privacy_url = f.optional("privacy_url", validate::page_url);
        let name = name?;
        Ok(Self {
            domains: domains?.unwrap_or_default(),
            appearance: WidgetAppearance {
                title: title?.unwrap_or_else(|| name.clone()),
                greeting: greeting?.unwrap_or_else(|| "Hi! How can we help?".to_owned()),
                accent_color: accent?.unwrap_or_else(|| "#2563eb".to_owned()),
                privacy_text: privacy_text?.unwrap_or_else(|| "We keep your messages to answer you.".to_owned()),
                privacy_url: privacy_url?.map(|u| u.url),
            },
            name,
        })
    }
}

#[derive(ToSchema)]
pub struct InstallationCreateRequest {
    /// Default `Website`.
    name: Option<schema::Name>,
    /// Default `web`.
    installation_type: Option<schema::ShortText>,
}

impl FromFields for NewInstallationInput {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let name = f.optional_text("name", validate::name);
        let installation_type = f.optional_text("installation_type", |s| validate::optional(&validate::SHORT_TEXT, s));
        Ok(Self { name: name?, installation_type: installation_type? })
    }
}

#[derive(ToSchema)]
pub struct InstallationPatchRequest {
    enabled: bool,
}

pub struct InstallationPatch {
    pub enabled: bool,
}

impl FromFields for InstallationPatch {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        Ok(Self { enabled: f.required_bool("enabled")? })
    }
}

#[derive(ToSchema)]
pub struct OperatorCreateRequest {
    /// Unique across the service, compared without regard to case.
    email: schema::Email,
    name: schema::RequiredName,
    /// 10 to 1,024 characters.
    password: schema::NewPassword,
    #[schema(schema_with = schema::role)]
    role: String,
    /// Sites of this tenant whose conversations an agent sees.
    #[schema(schema_with = schema::site_ids)]
    site_ids: Option<Vec<i64>>,
}

impl FromFields for NewOperatorInput {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let email = f.required("email", validate::email);
        let name = f.required("name", validate::required_name);
        let password = f.required("password", validate::new_password);
        let role = f.required("role", role);
        let site_ids = f.optional_list("site_ids", site_id);
        Ok(Self { email: email?, name: name?, password: password?, role: role?, site_ids: site_ids?.unwrap_or_default() })
    }
}

/// Every field is optional; only those sent change. Disabling an operator
/// or changing its password signs it out everywhere.
#[derive(ToSchema)]
pub struct OperatorPatchRequest {
    name: Option<schema::RequiredName>,
    password: Option<schema::NewPassword>,
    #[schema(schema_with = schema::optional_role)]
    role: Option<String>,
    active: Option<bool>,
    #[schema(schema_with = schema::site_ids)]
    site_ids: Option<Vec<i64>>,
}

impl FromFields for OperatorPatch {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let name = f.optional("name", validate::required_name);
        let password = f.optional("password", validate::new_password);
        let role = f.optional("role", role);
        let active = f.optional_bool("active");
        let site_ids = f.optional_list("site_ids", site_id);
        Ok(Self { name: name?, password: password?, role: role?, active: active?, site_ids: site_ids? })
    }
}

#[derive(ToSchema)]
pub struct WebhookCreateRequest {
    /// http or https; its host must resolve, and not to an address inside
    /// the network (unless the service allows private targets), or the
    /// answer is 422.
    url: schema::PageUrl,
    /// Kinds to receive, at least one; all kinds when absent.
    #[schema(schema_with = schema::event_kinds)]
    events: Option<Vec<String>>,
}

/// A webhook registration before its URL's host is checked.
pub struct WebhookCreate {
    pub url: String,
    pub events: Option<Vec<EventKind>>,
}

/// A kind partners can subscribe to, or why `name` is none.
fn webhook_kind(name: &str) -> Result<EventKind, String> {
    EventKind::parse_webhook(name).ok_or_else(|| {
        let kinds: Vec<&str> = EventKind::WEBHOOK.iter().map(|k| k.as_str()).collect();
        format!("{name:?} is not one of {}", kinds.join(", "))
    })
}

impl FromFields for WebhookCreate {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let url = f.required("url", |s| validate::PAGE_URL.check(s).map(|()| s.to_owned()));
        let events = f.optional_list("events", |v| webhook_kind(v.as_str().ok_or_else(|| "must be a string".to_owned())?));
        let events = match events {
            Ok(Some(list)) if list.is_empty() => Err(f.reject("events", "must name at least one kind, or be left out for all")),
            other => other,
        };
        Ok(Self { url: url?, events: events? })
    }
}

#[derive(ToSchema)]
pub struct WebhookTestRequest {
    /// The kind of event to send.
    #[schema(schema_with = schema::event_kind)]
    event: String,
}

/// The kind of a test event.
pub struct WebhookTest {
    pub event: EventKind,
}

impl FromFields for WebhookTest {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let event = f.required("event", webhook_kind);
        Ok(Self { event: event? })
    }
}

#[derive(ToSchema)]
pub struct PersonalTokenCreateRequest {
    /// What the token is for: at most 255 characters, not blank.
    name: schema::RequiredName,
    /// Days until it expires, 1 to 365; 30 when absent.
    #[schema(schema_with = personal_token_days)]
    expires_in_days: Option<u32>,
}

/// 1 to 365; null counts as not given, as for every optional field.
fn personal_token_days() -> utoipa::openapi::Object {
    schema::nullable_bounded_integer(1, i64::from(MAX_PERSONAL_TOKEN_DAYS))
}

/// Days a personal token lives when the request does not say.
const DEFAULT_PERSONAL_TOKEN_DAYS: u32 = 30;

impl FromFields for NewPersonalToken {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let name = f.required("name", validate::required_name);
        let days = f.optional_integer("expires_in_days", 1, MAX_PERSONAL_TOKEN_DAYS);
        Ok(Self { name: name?, expires_in_days: days?.unwrap_or(DEFAULT_PERSONAL_TOKEN_DAYS) })
    }
}

/// `{"channel": "email", "to": an email address}` or `{"channel": "sms",
/// "to": an E.164 number}`: one variant per channel, so the document
/// states which `to` each takes.
pub struct ChannelTestRequest;

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

/// A test message: where to, through which channel.
pub struct ChannelTest {
    pub channel: Channel,
    pub to: String,
}

impl FromFields for ChannelTest {
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
