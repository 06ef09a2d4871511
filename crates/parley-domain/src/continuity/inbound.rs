//! Reading an emailed reply: a raw RFC 5322 message, MIME and encodings
//! (RFC 2045–2047, RFC 2231) undone by `mail-parser`.

use mail_parser::decoders::html::html_to_text;
use mail_parser::{Address, HeaderValue, MessageParser, MimeHeaders, PartType};

use super::InboundMail;

/// What of the body's text is kept, at most: a reply's new text comes
/// first, and a message may hold 5,000 characters. The rest (quoted
/// history, padding) never reaches the reply's parsing, whose cost grows
/// with the text (an HTML body is walked once, linearly, to find it).
const TEXT_LIMIT: usize = 64 * 1024;

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
    // The delivery's own recipient first: an email sent to two reply
    // addresses is delivered once to each, and each copy names its own.
    let mut recipients = Vec::new();
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
    for address in [message.to(), message.cc()].into_iter().flatten() {
        addresses(address, &mut recipients);
    }
    let from = message.from().and_then(|a| a.first()).and_then(|a| a.address()).map(str::to_owned);
    let text = match message.text_part(0).map(|p| &p.body) {
        Some(PartType::Text(text)) => cut(text).to_owned(),
        // An HTML-only reply: the history it quotes is cut before the HTML
        // is made text, which keeps no trace of what was quoted.
        Some(PartType::Html(html)) => {
            let text = html_to_text(&without_quoted_html(html));
            // Nothing left (markup this walk misread): the whole, rather
            // than a refusal that would bounce the visitor's reply.
            let text = if text.trim().is_empty() { html_to_text(html) } else { text };
            cut(&text).to_owned()
        }
        _ => String::new(),
    };
    let automatic = is_automatic(&message);
    let message_id = message.message_id().map(|id| id.chars().filter(|c| !c.is_whitespace()).collect());
    Some(InboundMail { message_id, from, recipients, text, automatic })
}

/// The first [`TEXT_LIMIT`] bytes, on a character boundary.
fn cut(text: &str) -> &str {
    if text.len() <= TEXT_LIMIT {
        return text;
    }
    let mut end = TEXT_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The HTML of the visitor's own words: the `<head>`, styles and scripts
/// go, and so does what mail clients quote, element by element (text
/// after a quote, an interleaved answer, stays): `<blockquote>`, Gmail's
/// `gmail_quote`, Thunderbird's `moz-cite-prefix`, Apple Mail's
/// `AppleOriginalContents`. Outlook writes its history after its reply
/// header (`divRplyFwdMsg`, `appendonsend`): from there on, everything
/// goes. Markers count only inside a tag, never in the text.
fn without_quoted_html(html: &str) -> String {
    const QUOTES: [&str; 3] = ["gmail_quote", "moz-cite-prefix", "appleoriginalcontents"];
    const HISTORY: [&str; 2] = ["divrplyfwdmsg", "appendonsend"];
    const HIDDEN: [&str; 3] = ["head", "style", "script"];
    let mut out = String::with_capacity(html.len().min(TEXT_LIMIT));
    // The element being left out, and how deep inside it the walk is.
    let mut skipping: Option<(String, usize)> = None;
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>').map(|c| open + c) else { break };
        if skipping.is_none() {
            out.push_str(&rest[..open]);
        }
        let tag = &rest[open + 1..close];
        let lower = tag.to_ascii_lowercase();
        let closing = lower.starts_with('/');
        let name: String = lower.trim_start_matches('/').chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        let self_closing = lower.ends_with('/');
        match &mut skipping {
            Some((skipped, depth)) if *skipped == name && !self_closing => {
                if closing {
                    *depth -= 1;
                    if *depth == 0 {
                        skipping = None;
                    }
                } else {
                    *depth += 1;
                }
            }
            Some(_) => {}
            None if closing || name.is_empty() => out.push_str(&rest[open..=close]),
            None if HISTORY.iter().any(|m| lower.contains(&format!("id=\"{m}\"")) || lower.contains(&format!("id={m}"))) => return out,
            // Only elements that always close: a marker on a `<p>` or a
            // `<br>` would leave out everything after it.
            None if !self_closing
                && (name == "blockquote"
                    || HIDDEN.contains(&name.as_str())
                    || (name == "div" && QUOTES.iter().any(|m| lower.contains(m)))) =>
            {
                skipping = Some((name, 1));
            }
            None => out.push_str(&rest[open..=close]),
        }
        rest = &rest[close + 1..];
        if out.len() > TEXT_LIMIT {
            return out;
        }
    }
    if skipping.is_none() {
        out.push_str(rest);
    }
    out
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
        assert_eq!(mail.recipients, ["reply+2-00@in.example.com", "reply+1-00@in.example.com", "other@example.com"]);
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
    fn html_history_is_cut_before_it_is_made_text() {
        let html =
            |body: &str| format!("From: a@example.com\r\nTo: b@example.com\r\nMessage-ID: <x@y>\r\nContent-Type: text/html\r\n\r\n{body}");
        let gmail = html(
            "<div dir=\"ltr\">Ok!</div><br><div class=\"gmail_quote\"><div>On Fri wrote:</div><blockquote>old /email/unsubscribe/1-ab</blockquote></div>",
        );
        assert_eq!(read(gmail.as_bytes()).expect("a message").text.trim(), "Ok!");
        let apple = html("<div>Fine</div><blockquote type=\"cite\">Earlier</blockquote>");
        assert_eq!(read(apple.as_bytes()).expect("a message").text.trim(), "Fine");
        let outlook = html("<p>Thanks</p><div id=\"divRplyFwdMsg\"><b>From:</b> Acme</div><div>old</div>");
        assert_eq!(read(outlook.as_bytes()).expect("a message").text.trim(), "Thanks");
        let interleaved = html(
            "<div>You asked:</div><blockquote><div>Which plan?</div><blockquote>deeper</blockquote></blockquote><div>The pro one.</div>",
        );
        let text = read(interleaved.as_bytes()).expect("a message").text;
        assert!(
            text.contains("You asked:") && text.contains("The pro one.") && !text.contains("Which plan") && !text.contains("deeper"),
            "{text:?}"
        );
        let words =
            html("<html><head><style>.gmail_quote{color:red}</style></head><body><p>I use gmail_quote in my text</p></body></html>");
        assert_eq!(read(words.as_bytes()).expect("a message").text.trim(), "I use gmail_quote in my text", "markers count only in tags");
        let unclosed = html("<p class=\"gmail_quote\">Kept<br class=\"gmail_quote\">and this</p>");
        assert!(read(unclosed.as_bytes()).expect("a message").text.contains("and this"), "a marker on a p or br removes nothing");
        let link = html("<p>See <a href=\"https://x.example/appendonsend\">this</a> please</p>");
        assert!(read(link.as_bytes()).expect("a message").text.contains("please"), "history markers count only as ids");
        let big_head = html(&format!("<html><head><style>{}</style></head><body><p>Short answer</p></body></html>", "x".repeat(100_000)));
        assert_eq!(read(big_head.as_bytes()).expect("a message").text.trim(), "Short answer");
    }

    #[test]
    fn a_large_body_is_read_only_as_far_as_a_reply_can_go() {
        let raw = format!(
            "From: a@example.com\r\nTo: b@example.com\r\nMessage-ID: < x@\r\n y >\r\nContent-Type: text/plain\r\n\r\n{}",
            "é on x\n".repeat(100_000)
        );
        let mail = read(raw.as_bytes()).expect("a message");
        assert!(mail.text.len() <= super::TEXT_LIMIT);
        assert_eq!(mail.message_id.as_deref(), Some("x@y"), "folding and spaces are not part of an id");
    }

    #[test]
    fn the_delivery_recipient_comes_first() {
        let raw = "From: a@example.com\r\nTo: reply+1-00@d.example, reply+2-00@d.example\r\nDelivered-To: reply+2-00@d.example\r\nMessage-ID: <x@y>\r\n\r\nhi";
        assert_eq!(read(raw.as_bytes()).expect("a message").recipients[0], "reply+2-00@d.example");
    }

    #[test]
    fn no_headers_is_no_message() {
        assert!(read(b"").is_none());
    }
}
