//! Reading an emailed reply: a raw RFC 5322 message, MIME and encodings
//! (RFC 2045–2047, RFC 2231) undone by `mail-parser`.

use super::InboundMail;
use mail_parser::{Address, HeaderValue, MessageParser};

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
    Some(InboundMail { message_id: message.message_id().map(str::to_owned), from, recipients, text })
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
    fn no_headers_is_no_message() {
        assert!(read(b"").is_none());
    }
}
