//! The OpenAPI 3.1 document, generated from the route declarations and
//! served at `GET /openapi.json`.

use std::collections::BTreeMap;

use axum::Router;
use axum::http::header;
use axum::routing::get;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, OpenApi as Doc, Ref, RefOr};
use utoipa::{IntoResponses, OpenApi};

use parley_domain::validate;
use parley_domain::verification::Method;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::schema::{Object, ObjectBuilder, OneOfBuilder, Schema};

use crate::AppState;
use crate::error::{ErrorBody, ErrorDetail};
use crate::requests::schema;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Parley API",
        description = "Visitor widget API, operator mobile API, health report and webhooks of Parley, \
            a self-hosted multi-tenant customer chat platform. Every `/api/v1/` route is also served under `/api/`. \
            Errors are always `{\"error\": {\"code\", \"message\", \"fields\"?}}`."
    ),
    components(schemas(ErrorBody, ErrorDetail)),
    tags(
        (name = "health", description = "Platform health"),
        (name = "widget", description = "Visitor widget API, authorised by the public installation token"),
        (name = "verification", description = "Visitor verification by email code, SMS code or magic link"),
        (name = "mobile", description = "Operator mobile API, authorised by a bearer token from `/mobile/login`"),
        (name = "admin", description = "Tenant administration, for operators with the admin role"),
        (name = "sandbox", description = "Demo credentials (only under `parley demo`)"),
    )
)]
struct ApiDoc;

pub fn base() -> Doc {
    ApiDoc::openapi()
}

fn error(description: &str) -> RefOr<Response> {
    ResponseBuilder::new()
        .description(description)
        .content("application/json", Content::new(Some(Ref::from_schema_name("ErrorBody"))))
        .build()
        .into()
}

fn errors(list: &[(&str, &str)]) -> BTreeMap<String, RefOr<Response>> {
    list.iter().map(|(code, description)| (code.to_string(), error(description))).collect()
}

const NOT_FOUND: (&str, &str) = ("404", "`not_found`: unknown token, or a conversation of another site or tenant");
const ORIGIN: (&str, &str) =
    ("403", "`origin_not_allowed`: the browser origin is not among the site's domains; `forbidden`: installation disabled");
const INVALID: (&str, &str) = ("422", "`validation_failed`, with `fields` naming every bad field");
const UNAVAILABLE: (&str, &str) = ("503", "`unavailable`: the database cannot be reached");
const TOO_MANY_STREAMS: (&str, &str) =
    ("429", "`rate_limited`: this address holds as many streams as it may; `Retry-After` says when to try again");

const BODY_ERRORS: [(&str, &str); 4] = [
    ("400", "`malformed_json`: the body is not a JSON object"),
    ("408", "`request_timeout`: the body did not arrive whole in time"),
    ("413", "`payload_too_large`: the body is over 64 KiB"),
    ("415", "`unsupported_media_type`: the content type is not application/json"),
];
const UNAUTHENTICATED: (&str, &str) = ("401", "`unauthenticated`: missing, malformed, expired or revoked bearer token");
const NOT_ADMIN: (&str, &str) =
    ("403", "`forbidden`: the operator is not an admin, or the token is a personal access token (for the mobile API only)");
const NOT_IN_TENANT: (&str, &str) = ("404", "`not_found`: no such record in this tenant");

/// Errors of the login route.
pub struct LoginErrors;

impl IntoResponses for LoginErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([
            ("401", "`invalid_credentials`: unknown email or wrong password (the same answer for both)"),
            INVALID,
            ("429", "`rate_limited`: too many logins from this address or failures for this email; see `Retry-After`"),
            UNAVAILABLE,
        ]);
        errors(&list)
    }
}

/// Errors of the operator routes that only read.
pub struct OperatorReadErrors;

impl IntoResponses for OperatorReadErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[UNAUTHENTICATED, ("404", "`not_found`: no such conversation, or not visible to this operator"), INVALID, UNAVAILABLE])
    }
}

/// Errors of an operator's query over what it sees (a search).
pub struct OperatorQueryErrors;

impl IntoResponses for OperatorQueryErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[UNAUTHENTICATED, INVALID, UNAVAILABLE])
    }
}

/// Errors of registering a device.
pub struct DeviceRegisterErrors;

impl IntoResponses for DeviceRegisterErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([
            ("401", "`unauthenticated`: no valid bearer token, or its sign-in ended while registering"),
            ("422", "`validation_failed`, with `fields`; also an operator with as many devices as it may have"),
            UNAVAILABLE,
        ]);
        errors(&list)
    }
}

/// Errors of the operator routes that read the tenant's own lists (the
/// caller's devices, the canned responses): a bearer token is all they ask.
pub struct DeviceListErrors;

impl IntoResponses for DeviceListErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[UNAUTHENTICATED, UNAVAILABLE])
    }
}

/// Errors of removing a device.
pub struct DeviceRemoveErrors;

impl IntoResponses for DeviceRemoveErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[UNAUTHENTICATED, ("404", "`not_found`: no such device of this operator"), UNAVAILABLE])
    }
}

/// Errors of changing the operator's own account.
pub struct AccountErrors;

impl IntoResponses for AccountErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([UNAUTHENTICATED, INVALID, UNAVAILABLE]);
        errors(&list)
    }
}

const BY_PERSONAL_TOKEN: (&str, &str) = ("403", "`forbidden`: a personal access token cannot change the password or end sign-ins");

/// Errors of the operator's password change.
pub struct PasswordChangeErrors;

impl IntoResponses for PasswordChangeErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([
            UNAUTHENTICATED,
            BY_PERSONAL_TOKEN,
            ("422", "`validation_failed`, with `fields`; `current_password` when it is not the operator's"),
            ("429", "`rate_limited`: too many wrong current passwords; see `Retry-After`"),
            UNAVAILABLE,
        ]);
        errors(&list)
    }
}

/// Errors of ending one of the operator's sign-ins.
pub struct SignInEndErrors;

impl IntoResponses for SignInEndErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[UNAUTHENTICATED, BY_PERSONAL_TOKEN, ("404", "`not_found`: no such sign-in of this operator"), UNAVAILABLE])
    }
}

/// Errors of the operator's catch-up.
pub struct CatchupErrors;

impl IntoResponses for CatchupErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[
            UNAUTHENTICATED,
            ("410", "`cursor_expired`: the cursor is older than the events kept, or unknown; reload and follow from the new cursor"),
            INVALID,
            TOO_MANY_STREAMS,
            UNAVAILABLE,
        ])
    }
}

/// Errors of the widget's stream.
pub struct StreamErrors;

impl IntoResponses for StreamErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[ORIGIN, NOT_FOUND, INVALID, TOO_MANY_STREAMS, UNAVAILABLE])
    }
}

/// Errors of the operator routes that change something.
pub struct OperatorErrors;

impl IntoResponses for OperatorErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([
            UNAUTHENTICATED,
            ("404", "`not_found`: no such conversation, or not visible to this operator"),
            ("409", "`conflict`: assign or transfer on a closed conversation"),
            ("422", "`validation_failed`, with `fields`; also an operator who cannot take the conversation"),
            UNAVAILABLE,
        ]);
        errors(&list)
    }
}

/// Errors of the administration routes that only read.
pub struct AdminReadErrors;

impl IntoResponses for AdminReadErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[UNAUTHENTICATED, NOT_ADMIN, NOT_IN_TENANT, INVALID, UNAVAILABLE])
    }
}

/// Errors of the administration routes that remove a record by its id:
/// they take no body.
pub struct AdminRemoveErrors;

impl IntoResponses for AdminRemoveErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[
            UNAUTHENTICATED,
            NOT_ADMIN,
            ("404", "`not_found`: no such record in this tenant (or removed already), or an id that is not a positive integer"),
            UNAVAILABLE,
        ])
    }
}

/// Errors of the administration routes that change something.
pub struct AdminErrors;

impl IntoResponses for AdminErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([
            UNAUTHENTICATED,
            NOT_ADMIN,
            NOT_IN_TENANT,
            (
                "409",
                "`conflict`: the record's state does not allow it (a disabled endpoint is neither redelivered to nor tested; a test \
                 still waits), or it repeats one that exists (an endpoint for the same URL and events, a live token of the same \
                 name), or a bound is reached",
            ),
            (
                "422",
                "`validation_failed`, with `fields`: a bad value, a referenced site that does not exist, an email \
                 already in use, an admin locking itself out, or a webhook host that cannot be used",
            ),
            UNAVAILABLE,
        ]);
        errors(&list)
    }
}

const PASSWORD_EMAILS: (&str, &str) = ("429", "`rate_limited`: the tenant sent its most password emails this hour; see `Retry-After`");

/// Errors of inviting an operator.
pub struct InviteErrors;

impl IntoResponses for InviteErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([
            UNAUTHENTICATED,
            NOT_ADMIN,
            ("422", "`validation_failed`, with `fields`: a bad value, a site that does not exist, an email already in use"),
            PASSWORD_EMAILS,
            UNAVAILABLE,
        ]);
        errors(&list)
    }
}

/// Errors of choosing a password through an emailed link.
pub struct PasswordSetErrors;

impl IntoResponses for PasswordSetErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([
            ("404", "`not_found`: the link is unknown, used, expired, or its operator disabled (which of them is not said)"),
            INVALID,
            UNAVAILABLE,
        ]);
        errors(&list)
    }
}

/// Errors of sending an operator a password link.
pub struct PasswordLinkErrors;

impl IntoResponses for PasswordLinkErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[
            UNAUTHENTICATED,
            NOT_ADMIN,
            ("404", "`not_found`: no such operator in this tenant, or an id that is not a positive integer"),
            ("409", "`conflict`: the operator is disabled"),
            PASSWORD_EMAILS,
            UNAVAILABLE,
        ])
    }
}

/// Errors of an admin's test message.
pub struct ChannelTestErrors;

impl IntoResponses for ChannelTestErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([
            UNAUTHENTICATED,
            NOT_ADMIN,
            ("409", "`conflict`: the channel is not configured on this service"),
            INVALID,
            ("429", "`rate_limited`: the tenant, or the recipient, had as many test messages as it may for now; see `Retry-After`"),
            ("503", "`unavailable`: the provider did not take the message (the service's logs say why), or the database cannot be reached"),
        ]);
        errors(&list)
    }
}

/// Errors of the verification routes.
pub struct VerificationErrors;

impl IntoResponses for VerificationErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([
            ORIGIN,
            ("404", "`not_found`: unknown token, conversation or challenge"),
            ("410", "`challenge_expired`: expired, used, superseded, or spent by 5 wrong codes"),
            ("422", "`validation_failed` (an unavailable method, no known target) or `invalid_code`"),
            ("429", "`rate_limited`, with `Retry-After`"),
            ("503", "`unavailable`: the message could not be sent; no challenge is usable"),
        ]);
        errors(&list)
    }
}

/// Errors of widget routes that only read.
pub struct ReadErrors;

impl IntoResponses for ReadErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[ORIGIN, NOT_FOUND, INVALID, UNAVAILABLE])
    }
}

/// Errors of widget routes that take a JSON body.
pub struct WriteErrors;

impl IntoResponses for WriteErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([ORIGIN, NOT_FOUND, INVALID, ("429", "`rate_limited`, with a `Retry-After` header"), UNAVAILABLE]);
        errors(&list)
    }
}

/// Errors of widget writes an installation's identity rules apply to:
/// a widget write's, and 401.
pub struct IdentityWriteErrors;

impl IntoResponses for IdentityWriteErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([
            ("401", "`identity_invalid`: the `user_hash` or `jwt` does not check, and nothing changed; `identity_required`: the installation takes identified visitors only"),
            ORIGIN,
            NOT_FOUND,
            INVALID,
            ("429", "`rate_limited`, with a `Retry-After` header"),
            UNAVAILABLE,
        ]);
        errors(&list)
    }
}

/// Errors of an upload, from the widget or an operator.
pub struct UploadErrors;

impl IntoResponses for UploadErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[
            (
                "401",
                "`unauthenticated` (operators): no valid bearer token; `identity_required` (widget): the installation takes identified visitors only",
            ),
            ORIGIN,
            ("404", "`not_found`: unknown token, or a conversation of another site or tenant, or not visible to this operator"),
            ("408", "`request_timeout`: the file did not arrive whole in time"),
            ("413", "`payload_too_large`: the file is over `PARLEY_ATTACHMENT_MAX` (10 MiB unless set); nothing was kept"),
            ("415", "`unsupported_media_type`: not `multipart/form-data`"),
            (
                "422",
                "`validation_failed`: no `file` part, an empty file, or a type the site does not take (told from the content); `quota_exceeded`: the account's files take all its space",
            ),
            ("429", "`rate_limited`, with a `Retry-After` header"),
            ("503", "`unavailable`: the database or the file store cannot be reached"),
        ])
    }
}

/// Errors of a link to a file.
pub struct FileErrors;

impl IntoResponses for FileErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[
            ("403", "`forbidden`: the link is not one this service made, or it has expired"),
            ("404", "`not_found`: the file is gone, or it has no thumbnail"),
            INVALID,
            ("503", "`unavailable`: the database or the file store cannot be reached"),
        ])
    }
}

/// The inbound email route's.
pub struct InboundErrors;

impl IntoResponses for InboundErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[
            ("401", "`unauthenticated`: no bearer token, or not `PARLEY_INBOUND_TOKEN`"),
            ("404", "`not_found`: no `PARLEY_INBOUND_TOKEN` is configured"),
            ("408", "`request_timeout`: the body did not arrive in time"),
            ("413", "`payload_too_large`: the email is over 10 MiB"),
            ("415", "`unsupported_media_type`: not `message/rfc822`"),
            ("422", "`validation_failed`: not an email, no `Message-ID`, or no new text above the quoted history"),
            ("429", "`rate_limited`: the conversation takes no more messages for now; with a `Retry-After` header"),
            UNAVAILABLE,
        ])
    }
}

/// A transcript request's: a widget write's, and 409.
pub struct TranscriptErrors;

impl IntoResponses for TranscriptErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut list = BODY_ERRORS.to_vec();
        list.extend([
            ORIGIN,
            NOT_FOUND,
            ("409", "`conflict`: the visitor unsubscribed from this conversation's emails, or this service sends no email"),
            INVALID,
            ("429", "`rate_limited`: a transcript was sent within the hour; with a `Retry-After` header"),
            UNAVAILABLE,
        ]);
        errors(&list)
    }
}

/// Completes the collected document: each copy of a route (root, `/api`,
/// `/api/v1`) gets its own operation id, as OpenAPI requires them to be
/// unique, and the verification start names the methods this service
/// offers, each with the target it takes.
pub fn finish(mut doc: Doc, methods: &[Method]) -> Doc {
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    if let Some(components) = doc.components.as_mut() {
        components.schemas.insert("VerificationStartRequest".to_owned(), verification_start(methods).into());
    }
    let bearer = SecurityScheme::Http(
        HttpBuilder::new().scheme(HttpAuthScheme::Bearer).description(Some("Token from `POST /api/v1/mobile/login`")).build(),
    );
    doc.components.get_or_insert_with(Default::default).add_security_scheme("bearer", bearer);
    for (path, item) in doc.paths.paths.iter_mut() {
        let suffix = id_suffix(path);
        for op in [&mut item.get, &mut item.post, &mut item.put, &mut item.patch, &mut item.delete].into_iter().flatten() {
            describe_responses(op);
            if let Some(suffix) = suffix {
                add_links(op, suffix);
            }
            if let (Some(id), Some(suffix)) = (&mut op.operation_id, suffix.filter(|s| !s.is_empty())) {
                id.push_str(suffix);
            }
        }
    }
    doc
}

/// OpenAPI 3.1 requires a description on every response, and strict
/// client generators refuse a document without one; utoipa leaves out an
/// empty one. A response declared without a description gets its status's
/// reason phrase ("OK", "Created").
fn describe_responses(op: &mut utoipa::openapi::path::Operation) {
    for (status, response) in op.responses.responses.iter_mut() {
        if let RefOr::T(response) = response
            && response.description.is_empty()
        {
            let reason = axum::http::StatusCode::from_bytes(status.as_bytes()).ok().and_then(|s| s.canonical_reason());
            response.description = reason.unwrap_or("Success").to_owned();
        }
    }
}

/// The operation-id suffix of a path's copy: none under `/api/v1`,
/// `_unversioned` under `/api`, `_root` for `/health` at the root; `None`
/// for the pages, which exist once.
fn id_suffix(path: &str) -> Option<&'static str> {
    if path.starts_with("/api/v1/") {
        Some("")
    } else if path.starts_with("/api/") {
        Some("_unversioned")
    } else if path.starts_with("/sandbox") || path.starts_with("/verify") {
        None
    } else {
        Some("_root")
    }
}

/// A link from an operation's answer to an operation that uses it, so
/// stateful testing (and a reader) can chain a create into its uses.
struct LinkSpec {
    from: &'static str,
    status: &'static str,
    to: &'static str,
    /// Target parameter (`path.id`, `query.token`) and its expression.
    parameters: &'static [(&'static str, &'static str)],
    /// Body fields of the target and their expressions.
    body: &'static [(&'static str, &'static str)],
}

const fn link(
    from: &'static str,
    status: &'static str,
    to: &'static str,
    parameters: &'static [(&'static str, &'static str)],
    body: &'static [(&'static str, &'static str)],
) -> LinkSpec {
    LinkSpec { from, status, to, parameters, body }
}

const TOKEN_FROM_BODY: &[(&str, &str)] = &[("token", "$request.body#/token")];
const NEW_TOKEN: &[(&str, &str)] = &[("token", "$response.body#/installation/token")];
const CONVERSATION: &[(&str, &str)] = &[("path.public_id", "$response.body#/conversation/public_id")];
const FIRST_CONVERSATION: &[(&str, &str)] = &[("path.id", "$response.body#/conversations/0/id")];
const NEW_WEBHOOK: &[(&str, &str)] = &[("path.id", "$response.body#/webhook/id")];

const LINKS: &[LinkSpec] = &[
    link(
        "widget_sync_visitor",
        "201",
        "widget_open_conversation",
        &[],
        &[("token", "$request.body#/token"), ("visitor_uuid", "$request.body#/uuid")],
    ),
    link(
        "widget_open_conversation",
        "201",
        "widget_list_messages",
        &[("path.public_id", "$response.body#/conversation/public_id"), ("query.token", "$request.body#/token")],
        &[],
    ),
    link("widget_open_conversation", "201", "widget_post_message", CONVERSATION, TOKEN_FROM_BODY),
    link("widget_open_conversation", "201", "verification_start", CONVERSATION, TOKEN_FROM_BODY),
    link(
        "verification_start",
        "202",
        "verification_confirm",
        &[("path.public_id", "$request.path.public_id")],
        &[("token", "$request.body#/token"), ("challenge_id", "$response.body#/challenge/id")],
    ),
    link("admin_create_site", "201", "admin_list_installations", &[("path.id", "$response.body#/site/id")], &[]),
    link("admin_create_site", "201", "admin_create_installation", &[("path.id", "$response.body#/site/id")], &[]),
    link("admin_create_installation", "201", "admin_update_installation", &[("path.id", "$response.body#/installation/id")], &[]),
    link("admin_create_installation", "201", "widget_config", &[("path.token", "$response.body#/installation/token")], &[]),
    link("admin_create_installation", "201", "widget_installation_health", &[("path.token", "$response.body#/installation/token")], &[]),
    link("admin_create_installation", "201", "widget_ping", &[], NEW_TOKEN),
    link("admin_create_installation", "201", "widget_sync_visitor", &[], NEW_TOKEN),
    link("admin_create_installation", "201", "widget_open_conversation", &[], NEW_TOKEN),
    link("admin_create_operator", "201", "admin_update_operator", &[("path.id", "$response.body#/operator/id")], &[]),
    link("admin_create_webhook", "201", "admin_list_deliveries", NEW_WEBHOOK, &[]),
    link("admin_create_webhook", "201", "admin_rotate_webhook_secret", NEW_WEBHOOK, &[]),
    link("admin_create_webhook", "201", "admin_delete_webhook", NEW_WEBHOOK, &[]),
    link(
        "admin_list_deliveries",
        "200",
        "admin_redeliver",
        &[("path.id", "$request.path.id"), ("path.delivery_id", "$response.body#/deliveries/0/id")],
        &[],
    ),
    link("mobile_list_conversations", "200", "mobile_get_conversation", FIRST_CONVERSATION, &[]),
    link("mobile_list_conversations", "200", "mobile_list_messages", FIRST_CONVERSATION, &[]),
    link("mobile_list_conversations", "200", "mobile_reply", FIRST_CONVERSATION, &[]),
    link("mobile_list_conversations", "200", "mobile_assign", FIRST_CONVERSATION, &[]),
    link("mobile_list_conversations", "200", "mobile_transfer", FIRST_CONVERSATION, &[]),
    link("mobile_list_conversations", "200", "mobile_close", FIRST_CONVERSATION, &[]),
];

/// Adds [`LINKS`] to an operation of the copy whose operation ids end in
/// `suffix` (the links name the suffixed ids they point to).
fn add_links(op: &mut utoipa::openapi::path::Operation, suffix: &str) {
    let Some(id) = op.operation_id.clone() else { return };
    for spec in LINKS.iter().filter(|l| l.from == id) {
        let Some(RefOr::T(response)) = op.responses.responses.get_mut(spec.status) else { continue };
        let mut builder = LinkBuilder::new().operation_id(format!("{}{suffix}", spec.to));
        for (name, expression) in spec.parameters {
            builder = builder.parameter(*name, *expression);
        }
        if !spec.body.is_empty() {
            let body: serde_json::Map<String, serde_json::Value> =
                spec.body.iter().map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v))).collect();
            builder = builder.request_body(Some(serde_json::Value::Object(body)));
        }
        response.links.insert(spec.to.to_owned(), builder.build().into());
    }
}

/// One variant per kind of target: email methods take an email address,
/// `sms_otp` a phone number; only the methods offered are listed.
fn verification_start(methods: &[Method]) -> Schema {
    let names = |phone: bool| -> Vec<&str> { methods.iter().filter(|m| m.uses_phone() == phone).map(|m| m.as_str()).collect() };
    let variant = |methods: Vec<&str>, target: &validate::Rule, what: &str| -> Object {
        ObjectBuilder::new()
            .property("token", schema::rule(&validate::TOKEN, false))
            .required("token")
            .property("method", schema::one_of(&methods, false))
            .required("method")
            .property(
                "target",
                ObjectBuilder::from(schema::rule(target, true)).description(Some(format!("{what}; the visitor's own when absent"))),
            )
            .build()
    };
    let (email, phone) = (names(false), names(true));
    let mut one_of = OneOfBuilder::new().description(Some(
        "Starts a verification. Only the methods this service can send are listed; 422 `validation_failed` also when no \
         target is given and none is known for the visitor.",
    ));
    if !email.is_empty() {
        one_of = one_of.item(variant(email, &validate::EMAIL, "Email address"));
    }
    if !phone.is_empty() {
        one_of = one_of.item(variant(phone, &validate::PHONE, "Phone number in E.164 form"));
    }
    if methods.is_empty() {
        // Nothing can be sent: every start is refused; the document says so.
        let all: Vec<&str> = Method::ALL.iter().map(|m| m.as_str()).collect();
        return ObjectBuilder::new()
            .property("token", schema::rule(&validate::TOKEN, false))
            .property("method", schema::one_of(&all, false))
            .required("token")
            .required("method")
            .description(Some("No verification method is configured on this service: every start answers 422."))
            .build()
            .into();
    }
    one_of.build().into()
}

pub fn routes(doc: Doc) -> Router<AppState> {
    let json = doc.to_json().unwrap_or_else(|_| "{}".to_owned());
    Router::new().route("/openapi.json", get(move || std::future::ready(([(header::CONTENT_TYPE, "application/json")], json.clone()))))
}
