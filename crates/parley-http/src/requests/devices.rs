//! Operator notifications' requests: a device to register, a read marker.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use parley_domain::devices::DeviceInput;
use parley_domain::model::{MessageId, Platform, WebPushKeys};
use parley_domain::validate;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type};
use utoipa::openapi::{Ref, RefOr};

use super::schema;
use crate::extract::{Fields, FromFields, Invalid, Shape};

/// Read by hand, and documented by hand as one variant per kind of
/// token: what `push_token` must be depends on `platform`.
pub struct DeviceRegisterRequest {
    pub platform: Platform,
    pub push_token: PushToken,
    pub app_id: Option<String>,
    pub name: Option<String>,
    pub locale: Option<String>,
}

/// A device's push token: APNs' or FCM's token, or a browser's
/// subscription (its endpoint and keys).
#[derive(Debug)]
pub struct PushToken {
    pub token: String,
    pub web_keys: Option<WebPushKeys>,
}

impl utoipa::PartialSchema for DeviceRegisterRequest {
    fn schema() -> RefOr<Schema> {
        let name = |what: &str| ObjectBuilder::from(schema::rule(&validate::NAME, true)).description(Some(what));
        let mut locale = schema::rule(&validate::LOCALE, true);
        locale.description = Some(validate::LOCALE.describe.to_owned());
        let variant = |platforms: &[&str], token: RefOr<Schema>| {
            ObjectBuilder::new()
                .property("platform", schema::one_of(platforms, false))
                .required("platform")
                .property("push_token", token)
                .required("push_token")
                .property("app_id", name("The app's bundle or package id, if the installation serves several."))
                .property("name", name("How the device shows in the operator's list of devices."))
                .property("locale", locale.clone())
                .build()
        };
        let subscription = RefOr::T(Schema::OneOf(
            OneOfBuilder::new()
                .item(Ref::from_schema_name("WebPushSubscription"))
                .item(ObjectBuilder::new().schema_type(SchemaType::new(Type::String)).description(Some("The subscription's JSON text.")))
                .build(),
        ));
        let token = ObjectBuilder::from(schema::rule(&validate::PUSH_TOKEN, false)).description(Some(validate::PUSH_TOKEN.describe));
        let one_of = OneOfBuilder::new()
            .description(Some("A device to notify: APNs' or FCM's token for `ios` and `android`, the browser's subscription for `web`."))
            .item(variant(&["ios", "android"], token.into()))
            .item(variant(&["web"], subscription))
            .build();
        RefOr::T(Schema::OneOf(one_of))
    }
}

/// The browser's subscription and its keys are named schemas: nested in
/// a union, inline objects trip strict client generators.
impl ToSchema for DeviceRegisterRequest {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        let key = |what: &str| {
            ObjectBuilder::new().schema_type(SchemaType::new(Type::String)).pattern(Some("^[A-Za-z0-9_-]+=*$")).description(Some(what))
        };
        let keys = ObjectBuilder::new()
            .description(Some("A browser subscription's keys (RFC 8291)."))
            .property("p256dh", key("The browser's P-256 public key, uncompressed (65 bytes), base64url."))
            .required("p256dh")
            .property("auth", key("The authentication secret (16 bytes), base64url."))
            .required("auth")
            .build();
        let endpoint = ObjectBuilder::from(schema::rule(&validate::PAGE_URL, false))
            .description(Some("An https URL of the browser's push service, without credentials or a fragment."));
        let subscription = ObjectBuilder::new()
            .description(Some("The browser's PushSubscription, as its toJSON() gives it."))
            .property("endpoint", endpoint)
            .required("endpoint")
            .property("keys", Ref::from_schema_name("WebPushKeys"))
            .required("keys")
            .build();
        schemas.push(("WebPushKeys".to_owned(), subscription_part(keys)));
        schemas.push(("WebPushSubscription".to_owned(), subscription_part(subscription)));
    }
}

fn subscription_part(object: utoipa::openapi::Object) -> RefOr<Schema> {
    RefOr::T(Schema::Object(object))
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
    #[schema(schema_with = schema::record_id)]
    pub message_id: MessageId,
}
