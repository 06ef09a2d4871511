//! Operator notifications' requests: a device to register, a read marker.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use parley_domain::devices::DeviceInput;
use parley_domain::model::{MessageId, Platform, WebPushKeys};
use parley_domain::validate;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type};

use super::schema;
use crate::extract::{Fields, FromFields, Invalid, Shape};

/// Read by hand: what `push_token` must be depends on `platform`.
#[derive(ToSchema)]
pub struct DeviceRegisterRequest {
    /// `ios` (APNs), `android` (FCM) or `web` (Web Push).
    #[schema(value_type = crate::views::names::PlatformName)]
    pub platform: Platform,
    /// Described by `push_token_schema`.
    #[schema(schema_with = push_token_schema)]
    pub push_token: PushToken,
    /// The app's bundle or package id, if the installation serves several.
    #[schema(value_type = Option<schema::Name>)]
    pub app_id: Option<String>,
    /// How the device shows in the operator's list of devices.
    #[schema(value_type = Option<schema::Name>)]
    pub name: Option<String>,
    /// The device's language (BCP 47), for the text of its notifications.
    #[schema(schema_with = locale_schema)]
    pub locale: Option<String>,
}

/// A device's push token: APNs' or FCM's token, or a browser's
/// subscription (its endpoint and keys).
#[derive(Debug)]
pub struct PushToken {
    pub token: String,
    pub web_keys: Option<WebPushKeys>,
}

fn push_token_schema() -> RefOr<Schema> {
    let key = |what: &str| {
        ObjectBuilder::new().schema_type(SchemaType::new(Type::String)).pattern(Some("^[A-Za-z0-9_-]+=*$")).description(Some(what))
    };
    let keys = ObjectBuilder::new()
        .property("p256dh", key("The browser's P-256 public key, uncompressed (65 bytes), base64url."))
        .required("p256dh")
        .property("auth", key("The authentication secret (16 bytes), base64url."))
        .required("auth");
    let subscription = ObjectBuilder::new()
        .description(Some("For `web`: the browser's PushSubscription as JSON (or that JSON as a string)."))
        .property(
            "endpoint",
            ObjectBuilder::from(schema::rule(&validate::PAGE_URL, false)).description(Some("An https URL of the browser's push service.")),
        )
        .required("endpoint")
        .property("keys", keys)
        .required("keys");
    let token = ObjectBuilder::from(schema::rule(&validate::PUSH_TOKEN, false)).description(Some(validate::PUSH_TOKEN.describe));
    RefOr::T(Schema::OneOf(OneOfBuilder::new().item(token).item(subscription).build()))
}

fn locale_schema() -> utoipa::openapi::Object {
    let mut s = schema::rule(&validate::LOCALE, true);
    s.description = Some(validate::LOCALE.describe.to_owned());
    s
}

/// A base64url key of `len` bytes (padding tolerated, as some browsers
/// send it).
fn key(v: Option<&Value>, len: usize, what: &str) -> Result<String, String> {
    let s = v.and_then(Value::as_str).ok_or_else(|| format!("must have keys.{what}"))?;
    match URL_SAFE_NO_PAD.decode(s.trim_end_matches('=')) {
        Ok(bytes) if bytes.len() == len && (what != "p256dh" || bytes[0] == 4) => Ok(s.trim_end_matches('=').to_owned()),
        _ => Err(format!("keys.{what} must be {len} bytes of base64url")),
    }
}

/// A browser's subscription: `{"endpoint", "keys": {"p256dh", "auth"}}`,
/// as an object or as its JSON text. The endpoint's address is checked by
/// the service.
fn subscription(v: &Value) -> Result<PushToken, String> {
    let parsed;
    let v = match v {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s).map_err(|_| "must be the browser's PushSubscription JSON".to_owned())?;
            &parsed
        }
        other => other,
    };
    let endpoint = v.get("endpoint").and_then(Value::as_str).ok_or("must have an endpoint")?;
    validate::PAGE_URL.check(endpoint).map_err(|m| format!("endpoint {m}"))?;
    // A push service's address names no user and no fragment: one that
    // does is not a browser's, and would dodge the one-device rule.
    let parsed = url::Url::parse(endpoint).map_err(|_| "endpoint must be an absolute https URL".to_owned())?;
    if !parsed.username().is_empty() || parsed.password().is_some() || parsed.fragment().is_some() {
        return Err("endpoint must not carry credentials or a fragment".into());
    }
    let keys = v.get("keys");
    let p256dh = key(keys.and_then(|k| k.get("p256dh")), 65, "p256dh")?;
    let auth = key(keys.and_then(|k| k.get("auth")), 16, "auth")?;
    Ok(PushToken { token: endpoint.to_owned(), web_keys: Some(WebPushKeys { p256dh, auth }) })
}

impl FromFields for DeviceRegisterRequest {
    const FIELDS: &'static [(&'static str, Shape)] =
        &[("platform", Shape::Text), ("push_token", Shape::Text), ("app_id", Shape::Text), ("name", Shape::Text), ("locale", Shape::Text)];

    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let platform = f.required("platform", |s| Platform::parse(s).ok_or_else(|| "must be one of ios, android, web".to_owned()));
        let push_token = match (&platform, f.json("push_token")) {
            (_, None) => Err(f.reject("push_token", "is required")),
            (Ok(Platform::Web), Some(v)) => subscription(v).map_err(|m| f.reject("push_token", m)),
            (Ok(_), Some(Value::String(s))) => validate::PUSH_TOKEN
                .check(s)
                .map(|()| PushToken { token: s.clone(), web_keys: None })
                .map_err(|m| f.reject("push_token", m)),
            (Ok(_), Some(_)) => Err(f.reject("push_token", "must be a string")),
            // Which form it must take is unknown: the platform's error says why.
            (Err(_), Some(_)) => Ok(PushToken { token: String::new(), web_keys: None }),
        };
        let app_id = f.optional("app_id", validate::name).map(Option::flatten);
        let name = f.optional("name", validate::name).map(Option::flatten);
        let locale = f.optional("locale", |s| validate::LOCALE.check(s).map(|()| s.to_owned()));
        Ok(Self { platform: platform?, push_token: push_token?, app_id: app_id?, name: name?, locale: locale? })
    }
}

impl From<DeviceRegisterRequest> for DeviceInput {
    fn from(r: DeviceRegisterRequest) -> Self {
        Self {
            platform: r.platform,
            push_token: r.push_token.token,
            web_keys: r.push_token.web_keys,
            app_id: r.app_id,
            name: r.name,
            locale: r.locale,
        }
    }
}

/// How far the operator has read a conversation.
#[derive(ToSchema, FromFields)]
pub struct ReadRequest {
    /// The last message read, of this conversation; an earlier one than
    /// the marker's leaves the marker where it is.
    #[schema(schema_with = schema::message_id)]
    pub message_id: MessageId,
}
