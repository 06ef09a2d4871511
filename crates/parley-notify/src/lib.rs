//! Message channels for verification: real email over SMTP, real SMS
//! through an HTTP gateway, and, under `parley demo` only, an outbox that
//! keeps messages for the sandbox page instead of sending them.

mod outbox;
mod sms;
mod smtp;

pub use outbox::SandboxOutbox;
pub use sms::SmsGateway;
pub use smtp::SmtpMailer;
