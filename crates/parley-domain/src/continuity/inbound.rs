//! Reading an emailed reply: a raw RFC 5322 message, MIME and encodings
//! (RFC 2045–2047, RFC 2231) undone by `mail-parser`.

use super::InboundMail;
use mail_parser::{Address, HeaderValue, MessageParser, MimeHeaders};

/// The headers a delivery may name its recipient in besides `To` and
/// `Cc`: Postfix's pipe adds `Delivered-To` (flag `D`) and
/// `X-Original-To` (flag `O`); Exim adds `Envelope-To`.
const DELIVERY_HEADERS: [&str; 3] = ["Delivered-To", "X-Original-To", "Envelope-To"];

/// What Parley needs of a raw message; `None` when it is not one (no
/// header section at all).
pub fn read(raw: &[u8]) -> Option<InboundMail> {
    let message = MessageParser::default().parse(raw)?;
    if message.root_part().headers.is_empty() {
        return None;
    }
    let mut recipients = Vec::new();
    for address in [message.to(), message.cc()].into_iter().flatten() {
        addresses(address, &mut recipients);
    }
    for name in DELIVERY_HEADERS {
        for value in message.header_values(name) {
            match value {
                HeaderValue::Address(a) => addresses(a, &mut recipients),
                HeaderValue::Text(t) => recipients.extend(t.split(',').map(|s| bare(s).to_owned())),
                HeaderValue::TextList(list) => recipients.extend(list.iter().map(|s| bare(s).to_owned())),
                _ => {}
            }
        }
    }
    let from = message.from().and_then(|a| a.first()).and_then(|a| a.address()).map(str::to_owned);
    let text = message.body_text(0).map(|t| t.into_owned()).unwrap_or_default();
    let automatic = is_automatic(&message);
    Some(InboundMail { message_id: message.message_id().map(str::to_owned), from, recipients, text, automatic })
}

/// An out-of-office answer, a bounce or a list's mail (RFC 3834's
/// `Auto-Submitted`, the older `Precedence` and `X-Autoreply` headers, a
/// delivery report): not something the visitor wrote, and answering it
/// would start a loop.
fn is_automatic(message: &mail_parser::Message<'_>) -> bool {
    let text = |name: &str| message.header_values(name).next().and_then(|v| v.as_text()).map(|t| t.trim().to_ascii_lowercase());
    let auto_submitted = text("Auto-Submitted").is_some_and(|v| v != "no");
    let precedence = text("Precedence").is_some_and(|v| matches!(v.as_str(), "bulk" | "junk" | "list" | "auto_reply"));
    let flagged =
        ["X-Autoreply", "X-Autorespond", "X-Auto-Response-Suppress-Reply"].iter().any(|h| message.header_values(*h).next().is_some());
    let report = message
        .root_part()
        .content_type()
        .is_some_and(|ct| ct.ctype().eq_ignore_ascii_case("multipart") && ct.subtype().is_some_and(|s| s.eq_ignore_ascii_case("report")));
    auto_submitted || precedence || flagged || report
}

fn addresses(address: &Address<'_>, into: &mut Vec<String>) {
    into.extend(address.iter().filter_map(|a| a.address()).map(str::to_owned));
}

/// An address written as `<a@b>` or `a@b`.
fn bare(s: &str) -> &str {
    s.trim().trim_start_matches('<').trim_end_matches('>')
}

#[cfg(test)]
mod tests {
    use super::read;

    #[test]
    fn reads_the_parts_a_reply_is_routed_and_checked_by() {
        let raw = "From: =?UTF-8?Q?Ren=C3=A9e?= <renee@example.com>\r\n\
                   To: Acme <reply+1-00@in.example.com>\r\n\
                   Cc: other@example.com\r\n\
                   Delivered-To: reply+2-00@in.example.com\r\n\
                   Subject: =?UTF-8?B?UmU6IFlvdXIgY29udmVyc2F0aW9u?=\r\n\
                   Message-ID: <abc@mail.example.com>\r\n\
                   Content-Type: text/plain; charset=utf-8\r\n\r\nMerci !\r\n";
        let mail = read(raw.as_bytes()).expect("a message");
        assert_eq!(mail.message_id.as_deref(), Some("abc@mail.example.com"));
        assert_eq!(mail.from.as_deref(), Some("renee@example.com"));
        assert_eq!(mail.recipients, ["reply+1-00@in.example.com", "other@example.com", "reply+2-00@in.example.com"]);
        assert_eq!(mail.text.trim(), "Merci !");
    }

    #[test]
    fn html_alone_is_made_text() {
        let raw =
            "From: a@example.com\r\nTo: b@example.com\r\nMessage-ID: <x@y>\r\nContent-Type: text/html\r\n\r\n<p>Hello <b>there</b></p>";
        let mail = read(raw.as_bytes()).expect("a message");
        assert!(mail.text.contains("Hello there"), "{:?}", mail.text);
    }

    #[test]
    fn automatic_answers_are_told_apart() {
        let base = "From: a@example.com\r\nTo: b@example.com\r\nMessage-ID: <x@y>\r\n";
        let reply = |extra: &str| read(format!("{base}{extra}Content-Type: text/plain\r\n\r\nI am away").as_bytes()).expect("a message");
        assert!(!reply("").automatic);
        assert!(!reply("Auto-Submitted: no\r\n").automatic);
        assert!(reply("Auto-Submitted: auto-replied\r\n").automatic);
        assert!(reply("Precedence: bulk\r\n").automatic);
        assert!(reply("X-Autoreply: yes\r\n").automatic);
        let report = format!(
            "{base}Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nfailed\r\n--b--\r\n"
        );
        assert!(read(report.as_bytes()).expect("a message").automatic);
    }

    #[test]
    fn no_headers_is_no_message() {
        assert!(read(b"").is_none());
    }
}
