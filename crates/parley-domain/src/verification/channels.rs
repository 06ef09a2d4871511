//! Where verification messages go. The domain only knows these traits; the
//! SMTP mailer, the SMS gateway client and the demo's outbox implement them
//! in `parley-notify`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::Method;
use crate::model::TenantId;

pub type SendFuture<'a> = Pin<Box<dyn Future<Output = Result<(), SendError>> + Send + 'a>>;

/// Why a message was not sent: for the logs, and whether trying again can
/// help. A provider that refuses the recipient itself (an SMTP 5xx
/// answer, an SMS gateway's 4xx) will refuse it again: the client is told
/// to fix the address. Anything else (the provider unreachable, busy, or
/// failing) is an outage, to be tried again later.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendError {
    pub permanent: bool,
    pub reason: String,
}

impl SendError {
    pub fn transient(reason: impl Into<String>) -> Self {
        Self { permanent: false, reason: reason.into() }
    }

    pub fn permanent(reason: impl Into<String>) -> Self {
        Self { permanent: true, reason: reason.into() }
    }
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)?;
        if self.permanent { f.write_str(" (refused for good)") } else { Ok(()) }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Email {
    pub to: String,
    pub subject: String,
    pub text: String,
    pub html: String,
    /// What an email of a conversation's thread carries besides (the
    /// continuity emails); verification messages have none.
    pub thread: Option<Threading>,
}

/// The headers that make a visitor's emails one thread they can reply to
/// and leave: `Message-ID`, `In-Reply-To`, `References`, `Reply-To`,
/// `List-Unsubscribe` with `List-Unsubscribe-Post` (RFC 8058), and the
/// site's name before the sender's address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Threading {
    pub from_name: String,
    /// Without angle brackets, like the two below.
    pub message_id: String,
    pub in_reply_to: Option<String>,
    pub references: Vec<String>,
    pub reply_to: Option<String>,
    /// The one-click unsubscribe address (https).
    pub unsubscribe: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sms {
    pub to: String,
    pub body: String,
}

pub trait EmailSender: Send + Sync {
    /// Delivers to the provider; `Err` says why, for the logs, and
    /// whether it can be tried again.
    fn send(&self, tenant: TenantId, email: Email) -> SendFuture<'_>;
    /// What carries the messages, as admins see it.
    fn provider(&self) -> Provider;
}

pub trait SmsSender: Send + Sync {
    fn send(&self, tenant: TenantId, sms: Sms) -> SendFuture<'_>;
    fn provider(&self) -> Provider;
}

/// What carries a channel's messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    Smtp,
    SmsGateway,
    /// `parley demo`'s outbox: kept for the sandbox page, never sent.
    SandboxOutbox,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Smtp => "smtp",
            Self::SmsGateway => "sms_gateway",
            Self::SandboxOutbox => "sandbox_outbox",
        }
    }
}

/// A channel that carries verification messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    Email,
    Sms,
}

impl Channel {
    pub const ALL: [Channel; 2] = [Channel::Email, Channel::Sms];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Email => "email",
            Self::Sms => "sms",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The verification methods that send through this channel.
    pub fn methods(self) -> Vec<Method> {
        Method::ALL.into_iter().filter(|m| m.uses_phone() == (self == Channel::Sms)).collect()
    }
}

/// The configured channels. A method whose channel is missing is not
/// offered and refused.
#[derive(Clone, Default)]
pub struct Channels {
    pub email: Option<Arc<dyn EmailSender>>,
    pub sms: Option<Arc<dyn SmsSender>>,
}

impl Channels {
    pub fn available(&self, method: Method) -> bool {
        if method.uses_phone() { self.sms.is_some() } else { self.email.is_some() }
    }

    /// The provider of `channel`, if it is configured.
    pub fn provider(&self, channel: Channel) -> Option<Provider> {
        match channel {
            Channel::Email => self.email.as_ref().map(|e| e.provider()),
            Channel::Sms => self.sms.as_ref().map(|s| s.provider()),
        }
    }

    /// The methods the widget may offer, in a stable order.
    pub fn methods(&self) -> Vec<Method> {
        Method::ALL.into_iter().filter(|m| self.available(*m)).collect()
    }
}
