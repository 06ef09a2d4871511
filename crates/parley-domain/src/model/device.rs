//! Where an operator is notified.

use super::{DeviceId, OperatorId, TokenId};
use crate::Timestamp;

/// The push service a device is reached through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Platform {
    /// Apple's push service (APNs).
    Ios,
    /// Firebase Cloud Messaging.
    Android,
    /// A browser's push service (Web Push).
    Web,
}

impl Platform {
    pub const ALL: [Platform; 3] = [Platform::Ios, Platform::Android, Platform::Web];

    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Ios => "ios",
            Platform::Android => "android",
            Platform::Web => "web",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// A browser subscription's keys (RFC 8291): the user agent's public key
/// (`p256dh`) and the authentication secret (`auth`), base64url as the
/// browser gives them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebPushKeys {
    pub p256dh: String,
    pub auth: String,
}

/// A device as its operator sees it: never its push token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    pub id: DeviceId,
    pub operator_id: OperatorId,
    pub platform: Platform,
    pub name: Option<String>,
    pub created_at: Timestamp,
    pub last_push_at: Option<Timestamp>,
}

/// A device to register for the sign-in `token_id`.
#[derive(Clone, Debug)]
pub struct NewDevice {
    pub operator_id: OperatorId,
    pub token_id: TokenId,
    pub platform: Platform,
    /// APNs' device token, FCM's registration token, or a browser
    /// subscription's endpoint.
    pub push_token: String,
    /// The push token's SHA-256: what makes it one device's.
    pub push_key: Vec<u8>,
    /// A browser's keys; none for the other platforms.
    pub web_keys: Option<WebPushKeys>,
    pub app_id: Option<String>,
    pub name: Option<String>,
    pub locale: Option<String>,
    pub created_at: Timestamp,
}
