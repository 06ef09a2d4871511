//! The visitor side: what the embeddable widget may do with a public
//! installation token.
//!
//! Every operation first resolves the token to its tenant, site and
//! installation, checks the browser origin against the site's domains, and
//! from then on works inside that [`SiteScope`] only.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, Timestamp};
use crate::error::DomainError;
use crate::events;
use crate::feed::polls::{self, Polls};
use crate::feed::{Cursor, Reader, record};
use crate::hours::Availability;
use crate::identity;
use crate::ids;
use crate::limits::{ClientKey, RateLimits};
use crate::model::*;
use crate::store::{Database, MessagePage, WriteTx};
use crate::token_cache::TokenCache;
use crate::validate::{self, PageUrl};

/// The widget version this build ships; older reported versions are
/// flagged in the installation health.
pub const CURRENT_WIDGET_VERSION: &str = "1.0.0";

/// How many messages one poll returns at most.
pub const MESSAGE_PAGE_LIMIT: u32 = 100;

/// The `<script>` element a partner pastes into its pages.
pub fn embed_snippet(public_url: &str, token: &str) -> String {
    format!(r#"<script async src="{public_url}/widget.js" data-api-base="{public_url}" data-installation-token="{token}"></script>"#)
}

/// Who is calling, as far as the widget rules care.
#[derive(Clone, Debug)]
pub struct Caller {
    pub ip: IpAddr,
    pub origin: Origin,
    /// The installation whose *try it* page (in the tenant web app, on
    /// Parley's own origin) made the request: that installation's domain
    /// lock lets it through, and its heartbeat is not recorded (the
    /// partner's pages, not Parley's, are what its health is about).
    pub try_page: Option<InstallationId>,
}

impl Caller {
    /// What per-address limits count this caller as.
    pub fn key(&self) -> ClientKey {
        self.ip.into()
    }
}

/// The browser `Origin` of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// No `Origin` header: not a cross-origin browser request.
    Absent,
    Host(String),
    /// `null` or something unparsable: never matches a domain list.
    Opaque,
}

#[derive(Clone, Debug)]
pub struct WidgetSettings {
    pub heartbeat_stale_after: Duration,
}

pub struct PingInput {
    pub token: String,
    pub current_url: Option<PageUrl>,
    pub installation_type: Option<String>,
    pub version: Option<String>,
}

pub struct VisitorInput {
    pub token: String,
    pub uuid: String,
    pub name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub current_url: Option<PageUrl>,
    /// Who the page says its signed-in user is (empty: anonymous).
    pub identity: identity::Claim,
    pub attributes: Option<serde_json::Map<String, serde_json::Value>>,
    /// The language the widget speaks (a tag; one the widget has no words
    /// for is not kept).
    pub locale: Option<String>,
}

/// A synchronised visitor. An identified one comes with its latest
/// conversation, so a second device continues it.
pub struct SyncedVisitor {
    pub visitor: Visitor,
    pub synced: Synced,
    pub conversation: Option<Conversation>,
}

pub struct OpenConversationInput {
    pub token: String,
    pub visitor_uuid: String,
    pub message: String,
    pub subject: Option<String>,
    pub current_url: Option<PageUrl>,
    pub client_message_id: Option<String>,
    /// The page's signature for its user: an identified visitor opens
    /// conversations only with it.
    pub identity: identity::Claim,
}

pub struct PostMessageInput {
    pub token: String,
    pub public_id: String,
    pub content: Content,
    pub current_url: Option<PageUrl>,
    pub client_message_id: Option<String>,
}

/// An installation as its widget presents it.
pub struct Presented {
    pub context: Arc<InstallationContext>,
    /// One of `locale::LANGUAGES`.
    pub language: &'static str,
    pub availability: Availability,
}

/// Whether a visitor synchronisation created the visitor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synced {
    Created,
    Updated,
}

pub struct InstallationHealth {
    pub context: Arc<InstallationContext>,
    pub warnings: Vec<String>,
}

#[derive(Clone)]
pub struct WidgetService {
    db: Database,
    clock: Arc<dyn Clock>,
    limits: Arc<RateLimits>,
    settings: WidgetSettings,
    tokens: Arc<TokenCache>,
    polls: Arc<Polls>,
}

/// Whether a token may be resolved from the cache.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Freshness {
    Cached,
    /// Read now: the answer shows the installation's heartbeat and health.
    Fresh,
}

impl WidgetService {
    pub fn new(db: Database, clock: Arc<dyn Clock>, limits: Arc<RateLimits>, settings: WidgetSettings) -> Self {
        let polls = Arc::new(Polls::new(db.conversation_changes()));
        Self { db, clock, limits, settings, tokens: Arc::new(TokenCache::default()), polls }
    }

    /// The installation a token names, with its tenant and site.
    async fn lookup(&self, token: &str, freshness: Freshness) -> Result<Arc<InstallationContext>, DomainError> {
        let generation = self.db.installations_generation();
        if freshness == Freshness::Cached
            && let Some(context) = self.tokens.get(token, generation)
        {
            return Ok(context);
        }
        let owned = token.to_owned();
        let context = Arc::new(self.db.read(move |r| r.installation_by_token(&owned)?.ok_or(DomainError::NotFound)).await?);
        self.tokens.put(token, Arc::clone(&context), generation);
        Ok(context)
    }

    /// Resolves a token and checks the caller's origin against the site.
    async fn resolve(&self, token: &str, caller: &Caller, freshness: Freshness) -> Result<Arc<InstallationContext>, DomainError> {
        let context = self.lookup(token, freshness).await?;
        let allowed = caller.try_page == Some(context.installation.id)
            || match &caller.origin {
                Origin::Absent => true,
                Origin::Host(host) => context.site.allows_host(host),
                Origin::Opaque => context.site.domains.is_empty(),
            };
        if !allowed {
            return Err(DomainError::OriginNotAllowed);
        }
        Ok(context)
    }

    /// Resolves for a write: also applies the per-address write limit and
    /// refuses a disabled installation when `needs_enabled`.
    pub(crate) async fn resolve_for_write(
        &self,
        token: &str,
        caller: &Caller,
        needs_enabled: bool,
    ) -> Result<Arc<InstallationContext>, DomainError> {
        let context = self.resolve(token, caller, Freshness::Cached).await?;
        if needs_enabled && !context.installation.enabled {
            return Err(DomainError::Forbidden("this installation is disabled"));
        }
        self.limits.widget_write(context.installation.id, caller.key())?;
        Ok(context)
    }

    /// Resolves a token for a typing indicator: the origin is checked, but
    /// not the write limit, which a visitor typing for a minute would
    /// spend (typing has its own, see `typing`).
    pub(crate) async fn resolve_typing(&self, token: &str, caller: &Caller) -> Result<Arc<InstallationContext>, DomainError> {
        self.resolve(token, caller, Freshness::Cached).await
    }

    /// The installation as the widget presents it to a browser whose
    /// languages are `accepted` (comma-separated, best first).
    pub async fn config(&self, token: &str, caller: &Caller, accepted: &str) -> Result<Presented, DomainError> {
        let context = self.resolve(token, caller, Freshness::Fresh).await?;
        let language = crate::locale::choose(context.site.settings.locale.as_deref(), accepted);
        let availability = context.site.settings.hours.as_ref().map_or(Availability::ALWAYS, |h| h.availability(self.clock.now()));
        Ok(Presented { context, language, availability })
    }

    /// The installation's health as a partner would want to read it. Open
    /// to any origin: it explains origin problems instead of refusing them.
    pub async fn installation_health(&self, token: &str, current_url: Option<PageUrl>) -> Result<InstallationHealth, DomainError> {
        let context = self.lookup(token, Freshness::Fresh).await?;
        let warnings = self.warnings(&context.site, &context.installation, current_url.as_ref());
        Ok(InstallationHealth { context, warnings })
    }

    /// What a partner should fix about an installation, in sentences.
    pub fn warnings(&self, site: &Site, inst: &Installation, current_url: Option<&PageUrl>) -> Vec<String> {
        let mut warnings = Vec::new();
        if !inst.enabled {
            warnings.push(
                "This installation is disabled: the widget accepts no new visitors or conversations until a tenant admin enables it again."
                    .to_owned(),
            );
        }
        let hosts = current_url.and_then(|u| u.host.clone()).into_iter().chain(inst.page_host.clone());
        for host in hosts {
            if !site.allows_host(&host) {
                warnings.push(format!(
                    "The page host {host} is not among the site's domains ({}): add it to the site or the browser will refuse the widget.",
                    site.domains.join(", ")
                ));
                break;
            }
        }
        match inst.last_seen_at {
            None => warnings.push(
                "No heartbeat received yet: check that the embed snippet is on your pages and that the page has loaded it.".to_owned(),
            ),
            Some(seen) => {
                let age = self.clock.now().since(seen);
                if age >= self.settings.heartbeat_stale_after {
                    warnings.push(format!(
                        "The last heartbeat was {} ago: the widget may have been removed from your pages.",
                        human_duration(age)
                    ));
                }
            }
        }
        if let Some(version) = &inst.widget_version
            && version_is_older(version, CURRENT_WIDGET_VERSION)
        {
            warnings.push(format!(
                "The widget reports version {version}, older than the current {CURRENT_WIDGET_VERSION}: reload the script from this server to update it."
            ));
        }
        warnings
    }

    /// Records a heartbeat; the first one (or one after staleness) makes the
    /// installation healthy and emits `installation.health.changed`.
    pub async fn ping(&self, caller: &Caller, input: PingInput) -> Result<InstallationContext, DomainError> {
        let resolved = self.resolve_for_write(&input.token, caller, false).await?;
        if caller.try_page == Some(resolved.installation.id) {
            return Ok(InstallationContext::clone(&resolved));
        }
        let now = self.clock.now();
        let heartbeat = Heartbeat {
            at: now,
            version: input.version,
            page_host: input.current_url.as_ref().and_then(|u| u.host.clone()),
            installation_type: input.installation_type,
        };
        let token = input.token;
        self.db
            .write(move |tx| {
                let mut ctx = tx.installation_by_token(&token)?.ok_or(DomainError::NotFound)?;
                let previous = ctx.installation.status();
                tx.record_heartbeat(ctx.scope(), ctx.installation.id, &heartbeat, InstallationStatus::Healthy)?;
                let inst = &mut ctx.installation;
                inst.heartbeat_status = InstallationStatus::Healthy;
                inst.last_seen_at = Some(heartbeat.at);
                inst.widget_version = heartbeat.version.clone().or(inst.widget_version.take());
                inst.page_host = heartbeat.page_host.clone().or(inst.page_host.take());
                inst.reported_type = heartbeat.installation_type.clone().or(inst.reported_type.take());
                if inst.status() != previous {
                    let event = events::installation_health_changed(&ctx.tenant, &ctx.site, &ctx.installation, previous, now);
                    tx.insert_event(ctx.tenant.id, &event)?;
                }
                Ok(ctx)
            })
            .await
    }

    /// Creates the visitor, or updates the fields it tells about itself.
    ///
    /// With an identity the page signed, the visitor is the site's user:
    /// the one visitor that user already is (on any device), else this
    /// browser's anonymous visitor, which becomes that user's, else a new
    /// one. A claim that does not check changes nothing.
    pub async fn sync_visitor(&self, caller: &Caller, input: VisitorInput) -> Result<SyncedVisitor, DomainError> {
        let ctx = self.resolve_for_write(&input.token, caller, true).await?;
        let now = self.clock.now();
        let identified = if input.identity.is_empty() {
            if ctx.installation.identity.required {
                return Err(DomainError::IdentityRequired);
            }
            None
        } else {
            Some(identity::check(&ctx.installation.identity, &input.identity, now)?)
        };
        let mut profile = VisitorProfile {
            name: input.name,
            email: input.email,
            phone: input.phone,
            last_url: input.current_url.map(|u| u.url),
            locale: input.locale.as_deref().and_then(crate::locale::supported).map(str::to_owned),
        };
        if let Some(signed) = &identified {
            profile.name = signed.name.clone().or(profile.name);
            profile.email = signed.email.clone().or(profile.email);
        }
        let sync = Arc::new(VisitorSync { scope: ctx.scope(), uuid: input.uuid, profile, identified, attributes: input.attributes, now });
        // Two devices of one new user identifying at the same moment, or
        // one uuid claimed by two at once (PostgreSQL): the second meets
        // the first's visitor, or takes a fresh uuid, on a second try.
        match self.write_sync(&sync).await {
            Err(DomainError::Store(crate::store::StoreError::Duplicate(_))) => self.write_sync(&sync).await,
            other => other,
        }
    }

    async fn write_sync(&self, sync: &Arc<VisitorSync>) -> Result<SyncedVisitor, DomainError> {
        let sync = Arc::clone(sync);
        self.db.write(move |tx| sync_in(tx, &sync)).await
    }

    /// Opens a conversation with its first message. A visitor the widget
    /// has not registered yet is created on the way, so a browser whose
    /// stored identifier outlived the server's data can still chat.
    pub async fn open_conversation(
        &self,
        caller: &Caller,
        input: OpenConversationInput,
    ) -> Result<(Conversation, Vec<Message>), DomainError> {
        let ctx = self.resolve_for_write(&input.token, caller, true).await?;
        let scope = ctx.scope();
        let now = self.clock.now();
        let public_id = ids::conversation_public_id()?;
        let tenant = ctx.tenant.clone();
        let site = ctx.site.clone();
        let installation_id = ctx.installation.id;
        let settings = ctx.installation.identity.clone();
        self.db
            .write(move |tx| {
                let visitor = visitor_for(tx, scope, &input.visitor_uuid, input.current_url.as_ref(), now)?;
                vouched(&settings, &input.identity, &visitor, now)?;
                // A repeat of an open that succeeded: the conversation it
                // opened, with the first message, as it answered then.
                if let Some(id) = &input.client_message_id
                    && let Some(first) = tx.visitor_client_message(scope, visitor.id, id)?
                {
                    let conversation = tx.conversation(scope.into(), first.conversation_id)?.ok_or(DomainError::NotFound)?;
                    return Ok((conversation, vec![first]));
                }
                let conversation = tx.insert_conversation(
                    scope,
                    &NewConversation {
                        public_id,
                        installation_id,
                        visitor_id: visitor.id,
                        subject: input.subject,
                        start_url: input.current_url.map(|u| u.url),
                        created_at: now,
                    },
                )?;
                let first = NewMessage {
                    client_message_id: input.client_message_id,
                    ..visitor_message(&conversation, &visitor, input.message, now)
                };
                let message = tx.insert_message(scope.into(), &first, &[])?;
                // Created first: a follower meets the conversation before
                // its first message.
                record::conversation_created(tx, &tenant, &conversation, &visitor, &message)?;
                record::appended_message(tx, &tenant, &conversation, &message)?;
                let mut messages = vec![message];
                messages.extend(reply_when_away(tx, &tenant, &site, &conversation, &visitor, now)?);
                Ok((conversation, messages))
            })
            .await
    }

    /// Messages for polling (after `after_id`, or the latest ones) and the
    /// visitor's cursor as of that read (the last entry of the
    /// conversation it sees; `FeedService::cursor_text` seals it for the
    /// client), read in one snapshot, so the widget can follow its stream
    /// from there and miss nothing written after.
    pub async fn messages(
        &self,
        caller: &Caller,
        token: &str,
        public_id: String,
        after_id: Option<MessageId>,
    ) -> Result<(Conversation, Vec<Message>, Cursor), DomainError> {
        let scope = self.resolve(token, caller, Freshness::Cached).await?.scope();
        let now = self.clock.now();
        // Most polls ask after the latest message and find nothing.
        if let Some(after) = after_id
            && let Some((conversation, cursor)) = self.polls.answer(scope, &public_id, after, now)
        {
            return Ok((conversation, Vec::new(), cursor));
        }
        let as_of = self.polls.begin();
        let asked = public_id.clone();
        let (conversation, messages, cursor) = self
            .db
            .read(move |r| {
                let page = MessagePage { after_id, limit: MESSAGE_PAGE_LIMIT, include_internal: false };
                let (conversation, messages) =
                    r.conversation_with_messages(scope.into(), &public_id, page)?.ok_or(DomainError::NotFound)?;
                let cursor = crate::feed::head_cursor(r, Reader::Visitor(scope, conversation.id), now)?;
                Ok((conversation, messages, cursor))
            })
            .await
            .inspect_err(|e| {
                if matches!(e, DomainError::NotFound) {
                    self.polls.forget(&asked);
                }
            })?;
        self.polls.remember(polls::Read {
            as_of,
            scope,
            conversation: &conversation,
            after_id,
            messages: &messages,
            limit: MESSAGE_PAGE_LIMIT,
            cursor,
            now,
        });
        Ok((conversation, messages, cursor))
    }

    /// Who follows a conversation's stream: its visitor, through an
    /// installation of its site (disabled ones too, as for reading).
    pub async fn stream_reader(&self, caller: &Caller, token: &str, public_id: String) -> Result<Reader, DomainError> {
        let scope = self.resolve(token, caller, Freshness::Cached).await?.scope();
        self.db
            .read(move |r| {
                let conversation = r.conversation_by_public_id(scope.into(), &public_id)?.ok_or(DomainError::NotFound)?;
                Ok(Reader::Visitor(scope, conversation.id))
            })
            .await
    }

    /// Whether a stream opened with this token may go on: the token
    /// still names an installation the caller may use.
    pub async fn stream_allowed(&self, caller: &Caller, token: &str) -> Result<(), DomainError> {
        self.resolve(token, caller, Freshness::Cached).await.map(drop)
    }

    /// Where a visitor's upload into its conversation goes. Counted
    /// against the address's widget writes, like a message.
    pub async fn upload_target(
        &self,
        caller: &Caller,
        token: &str,
        public_id: String,
    ) -> Result<crate::attachments::UploadTarget, DomainError> {
        let ctx = self.resolve_for_write(token, caller, false).await?;
        let scope = ctx.scope();
        let required = ctx.installation.identity.required;
        let site = ctx.site.settings.clone();
        self.db
            .read(move |r| {
                let (c, visitor) = r.conversation_and_visitor_by_public_id(scope.into(), &public_id)?.ok_or(DomainError::NotFound)?;
                if required && visitor.user_id.is_none() {
                    return Err(DomainError::IdentityRequired);
                }
                Ok(crate::attachments::UploadTarget {
                    scope: scope.into(),
                    conversation: c.id,
                    uploader: SenderKind::Visitor,
                    uploader_id: None,
                    site,
                })
            })
            .await
    }

    /// Adds a visitor message; a closed conversation reopens.
    pub async fn post_message(&self, caller: &Caller, input: PostMessageInput) -> Result<(Message, Conversation), DomainError> {
        let ctx = self.resolve_for_write(&input.token, caller, false).await?;
        let scope = ctx.scope();
        let tenant = ctx.tenant.clone();
        let site = ctx.site.clone();
        let now = self.clock.now();
        let limits = Arc::clone(&self.limits);
        let required = ctx.installation.identity.required;
        self.db
            .write(move |tx| {
                let (mut conversation, visitor) =
                    tx.conversation_and_visitor_by_public_id(scope.into(), &input.public_id)?.ok_or(DomainError::NotFound)?;
                if required && visitor.user_id.is_none() {
                    return Err(DomainError::IdentityRequired);
                }
                let new = NewMessage {
                    client_message_id: input.client_message_id,
                    attachment_ids: input.content.attachment_ids,
                    ..visitor_message(&conversation, &visitor, input.content.body, now)
                };
                if let Some(earlier) = crate::activity::earlier_send(tx, scope.into(), &new)? {
                    return Ok((earlier, conversation));
                }
                limits.conversation_message(conversation.id)?;
                let message = crate::activity::add_message(tx, &tenant, scope.into(), &mut conversation, &new)?;
                reply_when_away(tx, &tenant, &site, &conversation, &visitor, now)?;
                if let Some(url) = input.current_url {
                    let mut profile = visitor.profile.clone();
                    if profile.merge(&VisitorProfile { last_url: Some(url.url), ..Default::default() }) {
                        tx.update_visitor_profile(scope, visitor.id, &profile, now)?;
                    }
                }
                Ok((message, conversation))
            })
            .await
    }
}

/// Outside the site's business hours, a visitor's message gets an
/// automatic reply saying when the team is back, in the visitor's
/// language (else the site's): once, and again only after an operator
/// has answered since. Returns the reply.
fn reply_when_away(
    tx: &mut dyn WriteTx,
    tenant: &Tenant,
    site: &Site,
    c: &Conversation,
    visitor: &Visitor,
    now: Timestamp,
) -> Result<Option<Message>, DomainError> {
    let Some(hours) = &site.settings.hours else { return Ok(None) };
    let availability = hours.availability(now);
    let scope = SiteScope { tenant: c.tenant_id, site: c.site_id };
    if availability.online || !tx.mark_away_replied(scope, c.id, now)? {
        return Ok(None);
    }
    let language = visitor.profile.locale.as_deref().or(site.settings.locale.as_deref()).unwrap_or("en");
    let body = match availability.next_open_at {
        Some(at) => crate::locale::text(language, "auto_reply", &[("when", &hours.local(at))]),
        None => crate::locale::text(language, "auto_reply_later", &[]),
    };
    let reply = crate::inbox::system_message(c, body, None, false, now);
    Ok(Some(record::message(tx, tenant, scope.into(), c, &reply)?))
}

/// Whether the caller may act as `visitor`: an identified visitor only
/// with a signature of its own user (its uuid alone proves nothing), an
/// anonymous one unless the installation takes identified visitors only.
fn vouched(settings: &identity::IdentitySettings, claim: &identity::Claim, visitor: &Visitor, now: Timestamp) -> Result<(), DomainError> {
    match &visitor.user_id {
        None if settings.required => Err(DomainError::IdentityRequired),
        None => Ok(()),
        Some(_) if claim.is_empty() => Err(DomainError::IdentityRequired),
        Some(user) if identity::check(settings, claim, now)?.user_id == *user => Ok(()),
        Some(_) => Err(DomainError::IdentityInvalid),
    }
}

/// What one visitor synchronisation writes.
struct VisitorSync {
    scope: SiteScope,
    uuid: String,
    profile: VisitorProfile,
    identified: Option<identity::Identified>,
    attributes: Option<serde_json::Map<String, serde_json::Value>>,
    now: Timestamp,
}

fn sync_in(tx: &mut dyn WriteTx, sync: &VisitorSync) -> Result<SyncedVisitor, DomainError> {
    let (scope, now) = (sync.scope, sync.now);
    let by_user = match &sync.identified {
        Some(signed) => tx.visitor_by_user_id(scope, &signed.user_id)?,
        None => None,
    };
    // Without the user's visitor: this browser's, if it is anonymous. It
    // becomes the user's when signed; an identified one is not this
    // browser's to use (another user's on a shared computer, or, unsigned,
    // a uuid that reached every device of its user), and the caller gets
    // a visitor of its own under a fresh uuid.
    let (found, uuid_taken) = match by_user {
        Some(visitor) => (Some(visitor), true),
        None => {
            let by_uuid = tx.visitor_by_uuid(scope, &sync.uuid)?;
            let taken = by_uuid.is_some();
            (by_uuid.filter(|v| v.user_id.is_none()), taken)
        }
    };
    let (mut visitor, synced) = match found {
        Some(mut visitor) => {
            update_profile(tx, scope, &mut visitor, &sync.profile, now)?;
            (visitor, Synced::Updated)
        }
        None => {
            let uuid = if uuid_taken { uuid::Uuid::new_v4().to_string() } else { sync.uuid.clone() };
            let visitor = tx.insert_visitor(scope, &NewVisitor { uuid, profile: sync.profile.clone(), created_at: now })?;
            // A unit beside this one (PostgreSQL) registered the same new
            // uuid first and made it another user's: try again, which
            // takes a fresh uuid.
            if visitor.user_id.is_some() {
                return Err(DomainError::Store(crate::store::StoreError::Duplicate("the visitor became another user's".into())));
            }
            (visitor, Synced::Created)
        }
    };
    let mut changed = false;
    if let Some(signed) = &sync.identified {
        changed |= visitor.user_id.as_deref() != Some(signed.user_id.as_str());
        visitor.user_id = Some(signed.user_id.clone());
        if signed.email.is_some() && visitor.site_email != signed.email {
            visitor.site_email = signed.email.clone();
            changed = true;
        }
    }
    if let Some(update) = &sync.attributes {
        changed |= identity::merge_attributes(&mut visitor.attributes, update)?;
    }
    if changed {
        tx.update_visitor_identity(scope, &visitor, now)?;
        visitor.updated_at = now;
    }
    let conversation = match visitor.user_id {
        Some(_) => tx.latest_conversation_of(scope, visitor.id)?,
        None => None,
    };
    Ok(SyncedVisitor { visitor, synced, conversation })
}

/// Applies what the visitor told about itself. A verification vouches
/// for one email or phone: a new one is unverified.
fn update_profile(
    tx: &mut dyn WriteTx,
    scope: SiteScope,
    visitor: &mut Visitor,
    profile: &VisitorProfile,
    now: Timestamp,
) -> Result<(), DomainError> {
    let before = visitor.profile.clone();
    if !visitor.profile.merge(profile) {
        return Ok(());
    }
    tx.update_visitor_profile(scope, visitor.id, &visitor.profile, now)?;
    visitor.updated_at = now;
    let changed = match visitor.verified_method {
        Some(m) if m.uses_phone() => before.phone != visitor.profile.phone,
        Some(_) => !matches!((&before.email, &visitor.profile.email), (Some(a), Some(b)) if validate::same_email(a, b)),
        None => false,
    };
    if changed {
        tx.clear_verification(scope, visitor.id)?;
        visitor.verified_at = None;
        visitor.verified_method = None;
        visitor.verified_target = None;
    }
    Ok(())
}

fn visitor_for(tx: &mut dyn WriteTx, scope: SiteScope, uuid: &str, url: Option<&PageUrl>, now: Timestamp) -> Result<Visitor, DomainError> {
    if let Some(v) = tx.visitor_by_uuid(scope, uuid)? {
        return Ok(v);
    }
    let profile = VisitorProfile { last_url: url.map(|u| u.url.clone()), ..Default::default() };
    Ok(tx.insert_visitor(scope, &NewVisitor { uuid: uuid.to_owned(), profile, created_at: now })?)
}

pub(crate) fn visitor_message(conversation: &Conversation, visitor: &Visitor, body: String, now: Timestamp) -> NewMessage {
    NewMessage {
        conversation_id: conversation.id,
        sender: Sender { kind: SenderKind::Visitor, name: visitor.profile.name.clone(), operator_id: None },
        body,
        internal: false,
        created_at: now,
        client_message_id: None,
        attachment_ids: Vec::new(),
    }
}

/// Compares dotted numeric versions; anything unparsable counts as current.
fn version_is_older(reported: &str, current: &str) -> bool {
    let parse = |v: &str| -> Option<Vec<u64>> { v.trim_start_matches('v').split('.').map(|p| p.parse().ok()).collect() };
    match (parse(reported), parse(current)) {
        (Some(a), Some(b)) => a < b,
        _ => false,
    }
}

fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=119 => format!("{s} seconds"),
        120..=7199 => format!("{} minutes", s / 60),
        7200..=172_799 => format!("{} hours", s / 3600),
        _ => format!("{} days", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert!(version_is_older("0.9.1", "1.0.0"));
        assert!(!version_is_older("1.0.0", "1.0.0"));
        assert!(!version_is_older("1.2", "1.0.0"));
        assert!(!version_is_older("dev", "1.0.0"));
    }
}
