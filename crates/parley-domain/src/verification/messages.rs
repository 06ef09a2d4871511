//! The words of verification messages.

use super::channels::{Email, Sms};

pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

pub fn otp_email(to: &str, tenant: &str, code: &str) -> Email {
    Email {
        to: to.to_owned(),
        subject: format!("Your {tenant} verification code"),
        text: format!(
            "Your verification code is {code}.\n\nEnter it in the chat to confirm this email address. It expires in 10 minutes.\n\
             If you did not ask for it, you can ignore this email.\n"
        ),
        html: format!(
            "<p>Your verification code is</p><p style=\"font-size:24px;font-weight:bold;letter-spacing:4px\">{code}</p>\
             <p>Enter it in the chat to confirm this email address. It expires in 10 minutes.</p>\
             <p>If you did not ask for it, you can ignore this email.</p>"
        ),
        thread: None,
    }
}

pub fn link_email(to: &str, tenant: &str, link: &str) -> Email {
    Email {
        to: to.to_owned(),
        subject: format!("Confirm your email address for {tenant}"),
        text: format!(
            "Open this link to confirm this email address in your chat with {tenant}:\n\n{link}\n\n\
             It works once and expires in 10 minutes. If you did not ask for it, you can ignore this email.\n"
        ),
        html: format!(
            "<p>Open this link to confirm this email address in your chat with {t}:</p><p><a href=\"{l}\">Confirm my email address</a></p>\
             <p>It works once and expires in 10 minutes. If you did not ask for it, you can ignore this email.</p>",
            t = escape(tenant),
            l = escape(link)
        ),
        thread: None,
    }
}

pub fn otp_sms(to: &str, tenant: &str, code: &str) -> Sms {
    Sms { to: to.to_owned(), body: format!("{code} is your {tenant} verification code. It expires in 10 minutes.") }
}

/// A test of the email channel, sent by an admin to check the set-up.
pub fn test_email(to: &str, tenant: &str) -> Email {
    Email {
        to: to.to_owned(),
        subject: format!("Parley test email for {tenant}"),
        text: format!(
            "This is a test email from Parley for {tenant}.\n\nAn admin sent it to check that verification emails arrive. \
             Nothing needs to be done.\n"
        ),
        html: format!(
            "<p>This is a test email from Parley for {t}.</p><p>An admin sent it to check that verification emails arrive. \
             Nothing needs to be done.</p>",
            t = escape(tenant)
        ),
        thread: None,
    }
}

/// A test of the SMS channel.
pub fn test_sms(to: &str, tenant: &str) -> Sms {
    Sms { to: to.to_owned(), body: format!("Parley test message for {tenant}: verification texts arrive.") }
}
