//! Response bodies: which fields of the domain's records a client sees.
//!
//! Each type documents itself in the OpenAPI document; the field sets
//! follow `decisions.md` (a message has `id`, `body`, `created_at`,
//! `sender`; a widget conversation has `public_id`, `status`, `subject`,
//! `created_at`).

use parley_domain::attachments::links::Links;
use parley_domain::model::{Attachment, AttachmentRef, Conversation, Installation, Message, SenderKind, Site, Tenant, Visitor};
use parley_domain::verification::Method;
use parley_domain::{Timestamp, mask};
use serde::Serialize;
use utoipa::ToSchema;

/// An RFC 3339 date-time in UTC with milliseconds
/// (`2026-01-01T00:00:00.000Z`). Kept as the timestamp and written only
/// when the response is: no string per field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct DateTime(Timestamp);

impl utoipa::PartialSchema for DateTime {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
            .description(Some("An RFC 3339 date-time in UTC, with milliseconds."))
            .examples([serde_json::json!("2026-01-01T09:30:00.000Z")])
            .into()
    }
}

impl utoipa::ToSchema for DateTime {}

impl std::fmt::Display for DateTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.rfc3339().as_str())
    }
}

pub fn at(t: Timestamp) -> DateTime {
    DateTime(t)
}

#[derive(Serialize, ToSchema)]
pub struct TenantView {
    pub slug: String,
    pub name: String,
}

impl From<&Tenant> for TenantView {
    fn from(t: &Tenant) -> Self {
        Self { slug: t.slug.clone(), name: t.name.clone() }
    }
}

#[derive(Serialize, ToSchema)]
pub struct WidgetAppearanceView {
    pub title: String,
    pub greeting: String,
    /// CSS hex colour.
    #[schema(example = "#2563eb")]
    pub accent_color: String,
    pub privacy_text: String,
    pub privacy_url: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct SiteView {
    pub name: String,
    /// Host names the widget may run on (and their subdomains); empty means anywhere.
    pub domains: Vec<String>,
    /// What the widget shows.
    pub widget: WidgetAppearanceView,
}

impl From<&Site> for SiteView {
    fn from(s: &Site) -> Self {
        Self::with(s, &s.appearance)
    }
}

impl SiteView {
    /// The site as its widget shows it in `language`.
    pub fn in_language(s: &Site, language: &str) -> Self {
        Self::with(s, &s.appearance_in(language))
    }

    fn with(s: &Site, a: &parley_domain::model::WidgetAppearance) -> Self {
        Self {
            name: s.name.clone(),
            domains: s.domains.clone(),
            widget: WidgetAppearanceView {
                title: a.title.clone(),
                greeting: a.greeting.clone(),
                accent_color: a.accent_color.clone(),
                privacy_text: a.privacy_text.clone(),
                privacy_url: a.privacy_url.clone(),
            },
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct InstallationView {
    pub name: String,
    pub installation_type: String,
    /// `pending`, `healthy`, `stale` or `disabled`.
    #[schema(example = "healthy")]
    #[schema(value_type = crate::views::names::InstallationStatusName)]
    pub status: &'static str,
    pub enabled: bool,
    pub last_seen_at: Option<DateTime>,
    /// Verification methods the widget may offer.
    pub verification_methods: Vec<String>,
    /// Visitors the page has not identified are refused: the widget waits
    /// for `Parley('identify', …)`.
    pub identity_required: bool,
}

impl InstallationView {
    /// With the verification methods the widget may offer.
    pub fn new(i: &Installation, methods: &[Method]) -> Self {
        Self { verification_methods: methods.iter().map(|m| m.as_str().to_owned()).collect(), ..Self::from(i) }
    }
}

impl From<&Installation> for InstallationView {
    fn from(i: &Installation) -> Self {
        Self {
            name: i.name.clone(),
            installation_type: i.installation_type.clone(),
            status: i.status().as_str(),
            enabled: i.enabled,
            last_seen_at: i.last_seen_at.map(at),
            verification_methods: Vec::new(),
            identity_required: i.identity.required,
        }
    }
}

/// What the widget's heartbeats reported.
#[derive(Serialize, ToSchema)]
pub struct WidgetReportView {
    pub version: Option<String>,
    pub installation_type: Option<String>,
    pub page_host: Option<String>,
    pub last_seen_at: Option<DateTime>,
}

impl From<&Installation> for WidgetReportView {
    fn from(i: &Installation) -> Self {
        Self {
            version: i.widget_version.clone(),
            installation_type: i.reported_type.clone(),
            page_host: i.page_host.clone(),
            last_seen_at: i.last_seen_at.map(at),
        }
    }
}

/// A visitor as the widget sees it. The installation token is public and
/// a `uuid` may be guessable, so stored contact details come back only
/// masked: enough to show "we will email a***@example.com", not to read them.
#[derive(Serialize, ToSchema)]
pub struct VisitorView {
    pub uuid: String,
    /// Masked email, such as `a***@example.com`, when one is known.
    pub email_hint: Option<String>,
    /// Masked phone, such as `+1*******123`, when one is known.
    pub phone_hint: Option<String>,
    pub verified: bool,
    /// The page identified the visitor as one of its signed-in users.
    pub identified: bool,
    pub created_at: DateTime,
}

impl From<&Visitor> for VisitorView {
    fn from(v: &Visitor) -> Self {
        Self {
            uuid: v.uuid.clone(),
            email_hint: v.profile.email.as_deref().map(mask::email),
            phone_hint: v.profile.phone.as_deref().map(mask::phone),
            verified: v.verified_at.is_some(),
            identified: v.user_id.is_some(),
            created_at: at(v.created_at),
        }
    }
}

/// A conversation as its visitor sees it.
#[derive(Serialize, ToSchema)]
pub struct WidgetConversationView {
    pub public_id: String,
    /// `unassigned`, `assigned` or `closed`.
    #[schema(example = "unassigned")]
    #[schema(value_type = crate::views::names::ConversationStatusName)]
    pub status: &'static str,
    pub subject: Option<String>,
    pub created_at: DateTime,
    /// Whether the visitor completed a verification in this conversation.
    pub verified: bool,
}

impl From<&Conversation> for WidgetConversationView {
    fn from(c: &Conversation) -> Self {
        Self {
            public_id: c.public_id.clone(),
            status: c.status.as_str(),
            subject: c.subject.clone(),
            created_at: at(c.created_at),
            verified: c.verified_at.is_some(),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct SenderView {
    /// `visitor`, `operator` or `system`.
    #[serde(rename = "type")]
    #[schema(value_type = crate::views::names::SenderName)]
    pub kind: &'static str,
    pub name: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct MessageView {
    /// Increases in creation order within a conversation; use it as `after_id`.
    pub id: i64,
    /// Plain text; render it as text, never as HTML.
    pub body: String,
    pub created_at: DateTime,
    pub sender: SenderView,
    /// The sender's own id for the message, when its client gave one: a
    /// client replaces its pending copy with the message carrying it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_message_id: Option<String>,
    /// When the visitor's widget showed this operator message; null
    /// while it has not (and for other messages). The widget counts its
    /// unread messages by it.
    pub read_by_visitor_at: Option<DateTime>,
    /// The files it carries; empty for most messages (whose `body` is
    /// then never empty).
    pub attachments: Vec<AttachmentView>,
}

impl MessageView {
    /// A message as its visitor sees it: a system line names nobody (the
    /// operator whose action it tells is for operators to know).
    pub fn new(m: &Message, links: &Links) -> Self {
        let name = match m.sender.kind {
            SenderKind::System => None,
            _ => m.sender.name.clone(),
        };
        Self {
            id: m.id.0,
            body: m.body.clone(),
            created_at: at(m.created_at),
            sender: SenderView { kind: m.sender.kind.as_str(), name },
            client_message_id: m.client_message_id.clone(),
            read_by_visitor_at: m.read_by_visitor_at.map(at),
            attachments: m.attachments.iter().map(|a| AttachmentView::new(a, links)).collect(),
        }
    }
}

/// A file a message carries: the upload, and its links.
#[derive(Serialize, ToSchema)]
pub struct AttachmentView {
    #[serde(flatten)]
    pub file: UploadedView,
    /// Signed, valid for at least an hour: ask for the message again for
    /// a fresh one.
    pub url: String,
    /// At most 320 pixels on its longest side; pictures shown inline only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thumbnail_url: Option<String>,
}

impl AttachmentView {
    pub fn new(a: &AttachmentRef, links: &Links) -> Self {
        let (url, thumbnail_url) = links.of(a);
        Self { file: a.clone().into(), url, thumbnail_url }
    }
}

/// An upload, ready to be named in a message's `attachment_ids`.
#[derive(Serialize, ToSchema)]
pub struct UploadedView {
    #[schema(example = "att_Qm9vVGhlRmlsZUlkMTIzNDU2")]
    pub id: String,
    /// The sender's name for it, cleaned: show it, never use it as a path.
    pub name: String,
    /// Told from the content, never from the client: `image/png`,
    /// `application/pdf`, `text/plain`, …
    pub content_type: String,
    /// In bytes.
    pub size: u64,
    /// A picture shown inline has its size in pixels (and, on a message,
    /// a `thumbnail_url`); any other file is a download.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
}

impl From<AttachmentRef> for UploadedView {
    fn from(a: AttachmentRef) -> Self {
        let AttachmentRef { id, name, content_type, size, width, height } = a;
        Self { id, name, content_type, size, width, height }
    }
}

#[derive(Serialize, ToSchema)]
pub struct UploadResponse {
    pub attachment: UploadedView,
}

impl UploadResponse {
    /// `None` for an upload not finished (never answered).
    pub fn new(a: &Attachment) -> Option<Self> {
        Some(Self { attachment: a.describe()?.into() })
    }
}

#[derive(Serialize, ToSchema)]
pub struct WidgetConfigResponse {
    pub tenant: TenantView,
    /// With `widget`'s texts in `locale`.
    pub site: SiteView,
    pub installation: InstallationView,
    /// The language the widget speaks: the site's, else the first of the
    /// browser's (`lang`) there are words for, else `en`.
    #[schema(example = "de")]
    pub locale: &'static str,
    /// `ltr`, or `rtl` for Arabic and Hebrew.
    #[schema(example = "ltr")]
    pub direction: &'static str,
    /// The widget's own words in `locale`, by key.
    #[schema(value_type = Object)]
    pub strings: &'static parley_domain::locale::Words,
    /// Within the site's business hours (always, without hours).
    pub online: bool,
    /// When closed, the start of the next opening; null when open, or
    /// when no opening is ahead.
    pub next_open_at: Option<DateTime>,
}

impl WidgetConfigResponse {
    pub fn new(p: &parley_domain::widget::Presented, methods: &[Method]) -> Self {
        let c = &p.context;
        Self {
            tenant: (&c.tenant).into(),
            site: SiteView::in_language(&c.site, p.language),
            installation: InstallationView::new(&c.installation, methods),
            locale: p.language,
            direction: parley_domain::locale::direction(p.language),
            strings: parley_domain::locale::widget_words(p.language),
            online: p.availability.online,
            next_open_at: p.availability.next_open_at.map(at),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct InstallationHealthResponse {
    pub tenant: TenantView,
    pub site: SiteView,
    pub installation: InstallationView,
    pub widget: WidgetReportView,
    /// Plain sentences telling the partner what to fix.
    pub warnings: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct WidgetPingResponse {
    pub installation: InstallationView,
    pub site: SiteView,
}

#[derive(Serialize, ToSchema)]
pub struct WidgetVisitorResponse {
    pub visitor: VisitorView,
    /// An identified visitor's latest conversation (from any device),
    /// which the widget continues; null for an anonymous visitor or one
    /// without a conversation yet.
    pub conversation: Option<WidgetConversationView>,
}

#[derive(Serialize, ToSchema)]
pub struct WidgetConversationResponse {
    pub conversation: WidgetConversationView,
    pub messages: Vec<MessageView>,
}

#[derive(Serialize, ToSchema)]
pub struct WidgetMessagesResponse {
    pub conversation: WidgetConversationView,
    /// Oldest first, at most 100.
    pub messages: Vec<MessageView>,
    /// Where the conversation stood as of this read: open its stream with
    /// it as `last_event_id` to get everything written after. Opaque; it
    /// changes only when something the visitor sees happens in this
    /// conversation.
    #[schema(value_type = crate::requests::schema::VisitorCursor)]
    pub cursor: String,
}

/// `data` of a widget stream's `message.created`.
#[derive(Serialize, ToSchema)]
pub struct WidgetMessageEventData {
    pub message: MessageView,
}

/// `data` of a widget stream's `conversation.updated`: its status or
/// verification changed.
#[derive(Serialize, ToSchema)]
pub struct WidgetConversationEventData {
    pub conversation: WidgetConversationView,
}

#[derive(Serialize, ToSchema)]
pub struct WidgetMessageCreateResponse {
    pub message: MessageView,
    pub conversation: WidgetConversationView,
}

/// Where the visitor's reading stands.
#[derive(Serialize, ToSchema)]
pub struct WidgetReadResponse {
    /// The last message shown.
    pub message_id: i64,
    /// Operator messages the visitor has still not been shown.
    pub unread_count: u64,
}

/// A transcript on its way.
#[derive(Serialize, ToSchema)]
pub struct WidgetTranscriptResponse {
    /// Where it goes, masked (`a***@example.com`).
    pub email: String,
}

pub fn messages(list: &[Message], links: &Links) -> Vec<MessageView> {
    list.iter().map(|m| MessageView::new(m, links)).collect()
}
