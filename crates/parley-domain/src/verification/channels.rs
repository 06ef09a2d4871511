//! Where verification messages go. The domain only knows these traits; the
//! SMTP mailer, the SMS gateway client and the demo's outbox implement them
//! in `parley-notify`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::Method;
use crate::model::TenantId;

pub type SendFuture<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Email {
    pub to: String,
    pub subject: String,
    pub text: String,
    pub html: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sms {
    pub to: String,
    pub body: String,
}

pub trait EmailSender: Send + Sync {
    /// Delivers to the provider; `Err` is a short reason for the logs.
    fn send(&self, tenant: TenantId, email: Email) -> SendFuture<'_>;
}

pub trait SmsSender: Send + Sync {
    fn send(&self, tenant: TenantId, sms: Sms) -> SendFuture<'_>;
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

    /// The methods the widget may offer, in a stable order.
    pub fn methods(&self) -> Vec<Method> {
        Method::ALL.into_iter().filter(|m| self.available(*m)).collect()
    }
}
