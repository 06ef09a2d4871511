//! What tenant admins see.

use parley_domain::canned::CannedResponse;
use parley_domain::events::EventKind;
use parley_domain::model::{Installation, PersonalToken, Site};
use parley_domain::verification::setup::{ChannelState, TestSent};
use parley_domain::webhooks::{Delivery, Webhook};
use serde::Serialize;
use utoipa::ToSchema;

use parley_domain::attachments::kinds::FileKind;

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
    /// The widget's language for every visitor, or `auto`.
    #[schema(example = "auto")]
    pub locale: String,
    /// The widget's texts by language.
    #[schema(value_type = Object)]
    pub texts: std::collections::BTreeMap<String, parley_domain::model::SiteTexts>,
    /// Null: always open.
    #[schema(value_type = Option<Object>)]
    pub business_hours: Option<parley_domain::hours::BusinessHours>,
    /// The kinds of file visitors and operators may attach.
    #[schema(example = json!(["images", "pdf", "text", "office"]))]
    pub attachment_types: Vec<&'static str>,
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
            locale: s.settings.locale.clone().unwrap_or_else(|| "auto".to_owned()),
            texts: s.settings.texts.clone(),
            business_hours: s.settings.hours.clone(),
            attachment_types: FileKind::ALL.into_iter().filter(|k| s.settings.takes(*k)).map(FileKind::as_str).collect(),
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
    #[schema(value_type = crate::views::names::InstallationStatusName)]
    pub status: &'static str,
    pub enabled: bool,
    pub last_seen_at: Option<DateTime>,
    /// The host of the page the last heartbeat came from.
    pub page_host: Option<String>,
    /// The widget version the last heartbeat reported.
    pub widget_version: Option<String>,
    /// The `<script>` element to paste into the site's pages.
    pub embed_snippet: String,
    /// What to fix, in sentences (no heartbeat yet, a page outside the
    /// site's domains, a stale or old widget, disabled).
    pub warnings: Vec<String>,
    pub created_at: DateTime,
    /// An identity secret exists (it is shown only when made).
    pub identity_secret_set: bool,
    /// Until when the secret a rotation replaced still checks signatures.
    pub previous_identity_secret_expires_at: Option<DateTime>,
    /// Visitors the page has not identified are refused.
    pub identity_required: bool,
}

impl AdminInstallationView {
    /// `embed_snippet` and `warnings` come from the domain
    /// (`AdminService::embed_snippet`, `WidgetService::warnings`).
    pub fn new(i: &Installation, embed_snippet: String, warnings: Vec<String>) -> Self {
        Self {
            id: i.id.0,
            site_id: i.site_id.0,
            token: i.token.clone(),
            name: i.name.clone(),
            installation_type: i.installation_type.clone(),
            status: i.status().as_str(),
            enabled: i.enabled,
            last_seen_at: i.last_seen_at.map(at),
            page_host: i.page_host.clone(),
            widget_version: i.widget_version.clone(),
            embed_snippet,
            warnings,
            created_at: at(i.created_at),
            identity_secret_set: i.identity.secret.is_some(),
            previous_identity_secret_expires_at: i.identity.previous_secret_expires_at.map(at),
            identity_required: i.identity.required,
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
pub struct IdentitySecretResponse {
    pub installation: AdminInstallationView,
    /// Sign user ids with it on the site's server: `user_hash` = hex of
    /// HMAC-SHA256(this secret, user_id), or an HS256 token. Shown once.
    pub identity_secret: String,
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

/// A set-password link emailed to an operator.
#[derive(Serialize, ToSchema)]
pub struct PasswordLinkView {
    /// 72 hours after it was made.
    pub expires_at: DateTime,
    /// Whether the email left. False when no email channel is configured
    /// or the mail server refused it: send another link.
    pub sent: bool,
}

impl From<&parley_domain::invitations::LinkSent> for PasswordLinkView {
    fn from(l: &parley_domain::invitations::LinkSent) -> Self {
        Self { expires_at: at(l.expires_at), sent: l.sent }
    }
}

#[derive(Serialize, ToSchema)]
pub struct OperatorInvitedResponse {
    pub operator: UserView,
    pub password_link: PasswordLinkView,
}

#[derive(Serialize, ToSchema)]
pub struct PasswordLinkResponse {
    pub password_link: PasswordLinkView,
}

#[derive(Serialize, ToSchema)]
pub struct WebhookView {
    pub id: i64,
    pub url: String,
    /// The kinds this endpoint receives.
    #[schema(value_type = Vec<crate::views::names::EventName>)]
    pub events: Vec<&'static str>,
    /// False once the endpoint answered 410 Gone.
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    pub created_at: DateTime,
    /// Failed attempts in a row; from 5 on the endpoint is paused as a
    /// whole, 30 s doubling up to an hour, then probed with one attempt.
    pub consecutive_failures: u32,
    /// No attempt is made before this time (the endpoint keeps failing).
    pub paused_until: Option<DateTime>,
    /// After a rotation, when the previous secret stops signing beside the
    /// current one; null before the first rotation.
    pub previous_secret_expires_at: Option<DateTime>,
    /// The signing secret: only in the answers of create and rotate-secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl WebhookView {
    pub fn new(w: &Webhook, with_secret: bool) -> Self {
        let events = match &w.events {
            Some(kinds) => kinds.iter().map(|k| k.as_str()).collect(),
            None => EventKind::WEBHOOK.iter().map(|k| k.as_str()).collect(),
        };
        Self {
            id: w.id.0,
            url: w.url.clone(),
            events,
            enabled: w.enabled,
            disabled_reason: w.disabled_reason.clone(),
            created_at: at(w.created_at),
            consecutive_failures: w.failure_streak,
            paused_until: w.paused_until.map(at),
            previous_secret_expires_at: w.previous_secret_expires_at.map(at),
            secret: with_secret.then(|| w.secret.clone()),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct WebhookListResponse {
    pub webhooks: Vec<WebhookView>,
}

#[derive(Serialize, ToSchema)]
pub struct WebhookResponse {
    pub webhook: WebhookView,
}

#[derive(Serialize, ToSchema)]
pub struct AttemptView {
    pub attempted_at: DateTime,
    pub duration_ms: u64,
    /// Absent when no response came.
    pub status_code: Option<u16>,
    pub error: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct DeliveryView {
    pub id: i64,
    pub event_id: String,
    #[schema(value_type = crate::views::names::EventName)]
    pub event: &'static str,
    /// `pending`, `delivered` or `failed`.
    #[schema(value_type = crate::views::names::DeliveryStatusName)]
    pub status: &'static str,
    /// When the next attempt is due, while pending.
    pub next_attempt_at: Option<DateTime>,
    pub last_error: Option<String>,
    pub created_at: DateTime,
    pub finished_at: Option<DateTime>,
    pub attempts: Vec<AttemptView>,
}

impl From<&Delivery> for DeliveryView {
    fn from(d: &Delivery) -> Self {
        Self {
            id: d.id.0,
            event_id: d.event_id.clone(),
            event: d.kind.as_str(),
            status: d.status.as_str(),
            next_attempt_at: d.next_attempt_at.map(at),
            last_error: d.last_error.clone(),
            created_at: at(d.created_at),
            finished_at: d.finished_at.map(at),
            attempts: d
                .attempts
                .iter()
                .map(|a| AttemptView {
                    attempted_at: at(a.attempted_at),
                    duration_ms: a.duration_ms,
                    status_code: a.status_code,
                    error: a.error.clone(),
                })
                .collect(),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct DeliveryListResponse {
    /// Newest first.
    pub deliveries: Vec<DeliveryView>,
    pub meta: super::mobile::PageMetaView,
}

#[derive(Serialize, ToSchema)]
pub struct DeliveryResponse {
    pub delivery: DeliveryView,
}

/// A personal access token as listed: never the token itself, except in
/// the answer that made it.
#[derive(Serialize, ToSchema)]
pub struct PersonalTokenView {
    pub id: i64,
    pub name: String,
    pub created_at: DateTime,
    /// After this the token is refused; it stays listed until revoked.
    pub expires_at: DateTime,
    /// When it last authenticated a request, to the minute; null if never.
    pub last_used_at: Option<DateTime>,
    /// The bearer token for `Authorization: Bearer …`: only in the answer
    /// of the creation, shown this once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_token: Option<String>,
}

impl PersonalTokenView {
    pub fn new(t: &PersonalToken, access_token: Option<String>) -> Self {
        Self {
            id: t.id.0,
            name: t.name.clone(),
            created_at: at(t.created_at),
            expires_at: at(t.expires_at),
            last_used_at: t.last_used_at.map(at),
            access_token,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct PersonalTokenListResponse {
    pub tokens: Vec<PersonalTokenView>,
}

#[derive(Serialize, ToSchema)]
pub struct PersonalTokenResponse {
    pub token: PersonalTokenView,
}

/// One verification channel of the service.
#[derive(Serialize, ToSchema)]
pub struct ChannelView {
    /// `email` or `sms`.
    pub channel: &'static str,
    /// Whether its methods can be offered at all.
    pub configured: bool,
    /// `smtp`, `sms_gateway`, or `sandbox_outbox` (`parley demo`: kept
    /// for the sandbox page, never sent); null when not configured.
    pub provider: Option<&'static str>,
    /// The verification methods that send through it.
    pub methods: Vec<&'static str>,
}

impl From<&ChannelState> for ChannelView {
    fn from(c: &ChannelState) -> Self {
        Self {
            channel: c.channel.as_str(),
            configured: c.provider.is_some(),
            provider: c.provider.map(|p| p.as_str()),
            methods: c.methods.iter().map(|m| m.as_str()).collect(),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct VerificationSetupView {
    /// The methods the widget offers visitors, in its order.
    pub methods: Vec<&'static str>,
    pub channels: Vec<ChannelView>,
}

#[derive(Serialize, ToSchema)]
pub struct VerificationSetupResponse {
    pub verification: VerificationSetupView,
}

/// A test message the provider accepted.
#[derive(Serialize, ToSchema)]
pub struct ChannelTestView {
    pub channel: &'static str,
    pub provider: &'static str,
    pub to: String,
    pub sent_at: DateTime,
}

#[derive(Serialize, ToSchema)]
pub struct ChannelTestResponse {
    pub test: ChannelTestView,
}

impl From<&TestSent> for ChannelTestView {
    fn from(t: &TestSent) -> Self {
        Self { channel: t.channel.as_str(), provider: t.provider.as_str(), to: t.to.clone(), sent_at: at(t.sent_at) }
    }
}

#[derive(Serialize, ToSchema)]
pub struct CannedResponseView {
    pub id: i64,
    /// Lower case; typed after `/` in the reply box.
    pub shortcut: String,
    pub body: String,
    pub created_at: DateTime,
    pub updated_at: DateTime,
}

impl From<&CannedResponse> for CannedResponseView {
    fn from(c: &CannedResponse) -> Self {
        Self { id: c.id.0, shortcut: c.shortcut.clone(), body: c.body.clone(), created_at: at(c.created_at), updated_at: at(c.updated_at) }
    }
}

#[derive(Serialize, ToSchema)]
pub struct CannedResponseResponse {
    pub canned_response: CannedResponseView,
}

/// The tenant's canned responses, by shortcut.
#[derive(Serialize, ToSchema)]
pub struct CannedResponseListResponse {
    pub canned_responses: Vec<CannedResponseView>,
}

/// Who made an audited change.
#[derive(Serialize, ToSchema)]
pub struct AuditActorView {
    /// The operator; null for the service itself (retention).
    pub operator_id: Option<i64>,
    /// The operator's email when the change was made, or `retention`.
    pub name: String,
    /// The address the request came from (through trusted proxies).
    pub client_address: Option<String>,
}

/// One audited change.
#[derive(Serialize, ToSchema)]
pub struct AuditEntryView {
    pub id: i64,
    pub actor: AuditActorView,
    /// What was done, such as `site.updated` (see docs/api.md for the list).
    pub action: &'static str,
    /// The kind of record changed: `site`, `installation`, `operator`,
    /// `webhook`, `delivery`, `token`, `canned_response` or `conversation`.
    pub target_type: &'static str,
    pub target_id: Option<i64>,
    /// What changed, by field; secrets are only said to have changed.
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
    pub created_at: DateTime,
}

impl From<&parley_domain::audit::AuditEntry> for AuditEntryView {
    fn from(e: &parley_domain::audit::AuditEntry) -> Self {
        Self {
            id: e.id.0,
            actor: AuditActorView {
                operator_id: e.actor.operator.map(|o| o.0),
                name: e.actor.name.clone(),
                client_address: e.actor.address.map(|a| a.to_string()),
            },
            action: e.action.as_str(),
            target_type: e.action.target(),
            target_id: e.target_id,
            details: e.details.clone(),
            created_at: at(e.created_at),
        }
    }
}

/// The tenant's audit log, newest first.
#[derive(Serialize, ToSchema)]
pub struct AuditListResponse {
    pub entries: Vec<AuditEntryView>,
    pub meta: super::mobile::PageMetaView,
}
