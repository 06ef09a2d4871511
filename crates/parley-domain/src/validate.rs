//! Checks for every value that comes from outside.
//!
//! Each function turns raw input into a value the domain can trust, or into
//! a sentence telling the client what is wrong. The HTTP layer runs them for
//! every field of a request before reporting, so a client learns about all
//! of its mistakes at once.
//!
//! The text rules are [`Rule`]s: a regular expression and a length bound
//! that the server checks and the OpenAPI document publishes, the same
//! pattern in both places, so a value the document allows is accepted and
//! one it forbids is refused. The patterns mean what JSON Schema says they
//! mean (ECMA-262, where `$` is the end of the text) and keep to the part
//! of that syntax Rust's `regex` reads the same way: explicit classes,
//! `\uXXXX` escapes, `(?:…)` groups and bounded repeats; no `\s`, `\d` or
//! lookaround, whose meaning differs between engines. (Python's `re`, where
//! `$` also matches before a final newline, is not such an engine: tools
//! written in it must check patterns the ECMA way, as Schemathesis does.)

use std::sync::OnceLock;

use regex::Regex;
use url::Url;

pub const MAX_MESSAGE_CHARS: usize = 5_000;
pub const MAX_NAME_CHARS: usize = 255;
pub const MAX_URL_CHARS: usize = 2_048;
pub const MAX_UUID_CHARS: usize = 128;
pub const MAX_TOKEN_CHARS: usize = 128;
pub const MAX_SHORT_TEXT_CHARS: usize = 64;
pub const MAX_CLIENT_MESSAGE_ID_CHARS: usize = 64;
pub const MAX_LONG_TEXT_CHARS: usize = 1_000;
pub const MAX_EMAIL_CHARS: usize = 254;
pub const MIN_PASSWORD_CHARS: usize = 10;
pub const MAX_PASSWORD_CHARS: usize = 1_024;

pub type Check<T> = Result<T, String>;

/// A text rule: the pattern a value must match (none when empty), with its
/// length bounds in characters (Unicode code points, as JSON Schema counts
/// them).
pub struct Rule {
    pub pattern: &'static str,
    pub min_chars: usize,
    pub max_chars: usize,
    /// What the client is told when the pattern does not match.
    pub message: &'static str,
    /// The rule in a sentence, for the API document.
    pub describe: &'static str,
    compiled: OnceLock<Regex>,
}

impl Rule {
    const fn new(pattern: &'static str, min_chars: usize, max_chars: usize, message: &'static str, describe: &'static str) -> Self {
        Self { pattern, min_chars, max_chars, message, describe, compiled: OnceLock::new() }
    }

    /// Whether `s` satisfies the rule.
    pub fn check(&self, s: &str) -> Check<()> {
        let n = s.chars().count();
        if n < self.min_chars {
            return Err(if self.min_chars == 1 {
                "must not be empty".into()
            } else {
                format!("must be at least {} characters", self.min_chars)
            });
        }
        if n > self.max_chars {
            return Err(format!("must be at most {} characters", self.max_chars));
        }
        // The patterns are constants checked by the tests below; one that
        // failed to compile would refuse everything rather than panic.
        let re = self.compiled.get_or_init(|| Regex::new(self.pattern).unwrap_or_else(|_| Regex::new("[^\\s\\S]").expect("valid")));
        if re.is_match(s) { Ok(()) } else { Err(self.message.into()) }
    }
}

// Character classes shared by the patterns. Controls are Unicode's Cc
// (C0, DEL and C1); white space is Unicode's White_Space property.
macro_rules! controls {
    () => {
        "\\u0000-\\u001F\\u007F-\\u009F"
    };
}
/// Controls but tab, line feed and carriage return.
macro_rules! text_controls {
    () => {
        "\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F"
    };
}
macro_rules! white_space {
    () => {
        "\\u0009-\\u000D\\u0020\\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000"
    };
}
macro_rules! label {
    () => {
        "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    };
}
// The local part: at most 64 characters (RFC 5321), not starting or
// ending with a dot. Dots may follow each other inside it, as browsers'
// email fields accept; a pattern that refused that and kept the length
// would need a lookahead, which the published pattern cannot rely on.
macro_rules! email_body {
    () => {
        concat!(
            "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-](?:[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{0,62}[A-Za-z0-9!#$%&'*+/=?^_`{|}~-])?@",
            label!(),
            "(?:\\.",
            label!(),
            ")+"
        )
    };
}

/// An opaque public token or identifier: printable ASCII without spaces.
/// Unknown values are a 404 later, so this only refuses what cannot be one.
pub static TOKEN: Rule = Rule::new(
    "^[\\u0021-\\u007E]+$",
    1,
    MAX_TOKEN_CHARS,
    "is not a valid token",
    "An opaque token: 1 to 128 printable ASCII characters, no spaces.",
);

/// The widget's visitor identifier: printable characters, not all blank.
pub static VISITOR_UUID: Rule = Rule::new(
    concat!("^[^", controls!(), "]*[^", controls!(), white_space!(), "][^", controls!(), "]*$"),
    1,
    MAX_UUID_CHARS,
    "must be printable characters, not all blank",
    "1 to 128 printable characters, not all blank.",
);

/// A name that must be given: one line, not blank.
pub static REQUIRED_NAME: Rule = Rule::new(
    concat!("^[^", controls!(), "]*[^", controls!(), white_space!(), "][^", controls!(), "]*$"),
    1,
    MAX_NAME_CHARS,
    "must not be blank or contain control characters",
    "1 to 255 characters on one line, not blank; spaces around it are dropped.",
);

/// A canned response's shortcut, typed after `/` in the reply box: a
/// word of letters, digits, `-` and `_`, compared without case.
pub static SHORTCUT: Rule = Rule::new(
    "^[A-Za-z0-9][A-Za-z0-9_-]*$",
    1,
    32,
    "must be letters, digits, - and _, starting with a letter or digit",
    "1 to 32 letters, digits, `-` and `_`, starting with a letter or digit; kept in lower case, one per tenant.",
);

/// What an operator searches for: one line.
pub static SEARCH_TEXT: Rule = Rule::new(
    concat!("^[^", controls!(), "]*[^", controls!(), white_space!(), "][^", controls!(), "]*$"),
    1,
    200,
    "must not be blank or contain control characters",
    "1 to 200 characters on one line, with at least one letter or digit: every word must be a word of one message, or of the visitor's name and email, the last one the start of a word.",
);

/// A name that may be left blank (blank counts as not given): one line.
pub static NAME: Rule = Rule::new(
    concat!("^[^", controls!(), "]*$"),
    0,
    MAX_NAME_CHARS,
    "must not contain control characters",
    "At most 255 characters on one line; spaces around it are dropped, and blank counts as not given.",
);

/// A short label (installation type, widget version): one line.
pub static SHORT_TEXT: Rule = Rule::new(
    concat!("^[^", controls!(), "]*$"),
    0,
    MAX_SHORT_TEXT_CHARS,
    "must not contain control characters",
    "At most 64 characters on one line; blank counts as not given.",
);

/// A paragraph (greeting, privacy notice): tabs and line breaks allowed.
pub static LONG_TEXT: Rule = Rule::new(
    concat!("^[^", text_controls!(), "]*$"),
    0,
    MAX_LONG_TEXT_CHARS,
    "must not contain control characters other than tabs and line breaks",
    "At most 1,000 characters; tabs and line breaks allowed, other control characters not; blank counts as not given.",
);

/// An operator-only note: like a paragraph, as long as a message.
pub static NOTE: Rule = Rule::new(
    concat!("^[^", text_controls!(), "]*$"),
    0,
    MAX_MESSAGE_CHARS,
    "must not contain control characters other than tabs and line breaks",
    "At most 5,000 characters; tabs and line breaks allowed, other control characters not; blank counts as not given.",
);

/// What a client names a message it sends with, so a retry is recognised.
pub static CLIENT_MESSAGE_ID: Rule = Rule::new(
    concat!("^[^", controls!(), "]*[^", controls!(), white_space!(), "][^", controls!(), "]*$"),
    1,
    MAX_CLIENT_MESSAGE_ID_CHARS,
    "must be 1 to 64 printable characters, not all blank",
    "1 to 64 printable characters, not all blank: the client's own id for this message. A repeat with the same value creates nothing and answers as the first request did.",
);

/// An attachment's id, as an upload answered it.
pub static ATTACHMENT_ID: Rule = Rule::new(
    "^att_[A-Za-z0-9_-]{24}$",
    28,
    28,
    "must be an attachment id an upload returned",
    "The `id` of an upload to this conversation (`att_` and 24 characters).",
);

/// A message body: not blank; tabs and line breaks allowed, other control
/// characters not (they only serve to spoof what an operator sees, and JSON
/// sends each as six bytes).
pub static MESSAGE_BODY: Rule = Rule::new(
    concat!("^[^", text_controls!(), "]*[^", text_controls!(), white_space!(), "][^", text_controls!(), "]*$"),
    1,
    MAX_MESSAGE_CHARS,
    "must not be blank or contain control characters other than tabs and line breaks",
    "1 to 5,000 characters, not blank; tabs and line breaks allowed, other control characters not; white space around it is dropped.",
);

/// An email address, with spaces around it allowed (they are dropped).
pub static EMAIL: Rule = Rule::new(
    concat!("^ *", email_body!(), " *$"),
    3,
    MAX_EMAIL_CHARS,
    "must be a valid email address",
    "An email address (a local part of 1 to 64 letters, digits, dots and !#$%&'*+/=?^_`{|}~-, not starting or ending with a dot; a domain of at least two labels), at most 254 characters (RFC 5321); spaces around it are dropped.",
);

/// A phone number in E.164 form (`+` and 2 to 15 digits, no leading zero),
/// with spaces around it allowed.
pub static PHONE: Rule = Rule::new(
    "^ *\\+[1-9][0-9]{1,14} *$",
    3,
    64,
    "must be a phone number in E.164 form, such as +14155550123",
    "A phone number in E.164 form, such as +14155550123; spaces around it are dropped.",
);

/// An absolute http(s) URL: the scheme, then at least one character, and
/// no spaces or control characters.
pub static PAGE_URL: Rule = Rule::new(
    concat!("^https?://[^", controls!(), "\\u0020\"<>\\\\`]+$"),
    8,
    MAX_URL_CHARS,
    "must be an absolute http or https URL",
    "An absolute URL: http:// or https:// and at least one more character, without spaces, control characters or any of \" < > \\ `, at most 2,048 characters; a fragment (#…) is dropped.",
);

/// A page's address a setting may also remove: as [`PAGE_URL`], or empty.
pub static PAGE_URL_OR_EMPTY: Rule = Rule::new(
    concat!("^(https?://[^", controls!(), "\\u0020\"<>\\\\`]+)?$"),
    0,
    MAX_URL_CHARS,
    "must be an absolute http or https URL, or empty to remove it",
    "An absolute URL as a page address takes, or empty (\"\") to remove the one set.",
);

/// [`page_url`], or `None` for empty text: a link to remove.
pub fn page_url_or_empty(s: &str) -> Check<Option<String>> {
    if s.is_empty() {
        return Ok(None);
    }
    PAGE_URL_OR_EMPTY.check(s)?;
    page_url(s).map(|u| Some(u.url))
}

/// A host name as listed in a site's `domains` (a trailing dot allowed).
pub static DOMAIN: Rule = Rule::new(
    concat!("^", label!(), "(?:\\.", label!(), ")*\\.?$"),
    1,
    254,
    "must be a host name such as shop.example.com",
    "A host name of letters, digits and hyphens in dot-separated labels, a trailing dot allowed.",
);

/// A colour: `#` and six hex digits.
pub static COLOUR: Rule = Rule::new("^#[0-9A-Fa-f]{6}$", 7, 7, "must be a colour such as #2563eb", "A colour: # and six hex digits.");

/// A password to sign in with: anything, as long as it is not empty.
pub static PASSWORD: Rule = Rule::new("", 1, MAX_PASSWORD_CHARS, "must not be empty", "1 to 1,024 characters of any kind.");

/// A new password: 10 to 1,024 characters of any kind.
pub static NEW_PASSWORD: Rule =
    Rule::new("", MIN_PASSWORD_CHARS, MAX_PASSWORD_CHARS, "must be 10 to 1024 characters", "10 to 1,024 characters of any kind.");

/// A verification code: the six digits, or the long code of a magic link.
pub static CODE: Rule = Rule::new(
    "^ *[\\u0021-\\u007E]+ *$",
    1,
    128,
    "is not a valid code",
    "The six digits of a code, or the code of a magic link: printable ASCII characters without spaces, at most 128 with the spaces around it (which are dropped).",
);

/// A visitor's feed cursor, as a query brings it back: sealed (54
/// characters of URL-safe base64, see `feed::seal`), or the plain form of
/// releases before cursors were sealed, which is well formed but never
/// opens (its stream gets a `reset`, so a widget loaded before an upgrade
/// reloads rather than falling back to polling).
pub static VISITOR_CURSOR: Rule = Rule::new(
    "^(?:[A-Za-z0-9_-]{54}|[0-9a-z]{1,12}-[0-9a-z]{1,12}-[0-9a-z]{1,12})$",
    5,
    54,
    "must be a cursor this service returned",
    "The `cursor` of the conversation's messages, or an event's `id`: opaque.",
);

/// A device's push token as APNs or FCM issue it: printable ASCII
/// without spaces (APNs' are 64 hex digits, FCM's about 160 characters
/// of base64 and punctuation), with room for longer ones.
pub static PUSH_TOKEN: Rule = Rule::new(
    "^[\\u0021-\\u007E]+$",
    1,
    4_096,
    "is not a valid push token",
    "The device's push token from APNs or FCM: 1 to 4,096 printable ASCII characters, no spaces.",
);

/// A browser's languages: tags separated by commas (weights allowed).
pub static LANGUAGE_LIST: Rule = Rule::new(
    "^[A-Za-z0-9_,;=. -]*$",
    0,
    500,
    "must be language tags separated by commas",
    "Language tags separated by commas, best first, such as `de-AT,de,en`: at most 500 characters.",
);

/// The site's own id of its signed-in user: printable, not all blank.
pub static USER_ID: Rule = Rule::new(
    concat!("^[^", controls!(), "]*[^", controls!(), white_space!(), "][^", controls!(), "]*$"),
    1,
    crate::identity::USER_ID_MAX,
    "must be printable characters, not all blank",
    "The site's own id of its signed-in user: 1 to 255 printable characters, not all blank.",
);

/// A signature of the site's server (`user_hash`, `jwt`): printable
/// ASCII. Whether it signs anything is checked later, and a wrong one is
/// 401 `identity_invalid`, never a validation error.
pub static SIGNATURE: Rule = Rule::new(
    "^[\\u0021-\\u007E]+$",
    1,
    4_096,
    "must be printable ASCII without spaces",
    "As the site's server made it: 1 to 4,096 printable ASCII characters. A signature that does not check is 401 `identity_invalid`.",
);

/// A language tag (BCP 47), such as `en`, `pt-BR` or `zh-Hant-TW`.
pub static LOCALE: Rule = Rule::new(
    "^[A-Za-z]{2,8}(?:-[A-Za-z0-9]{1,8})*$",
    2,
    35,
    "must be a language tag such as en or pt-BR",
    "A language tag (BCP 47) such as `en` or `pt-BR`, at most 35 characters.",
);

/// An opaque public token or identifier.
pub fn token(s: &str) -> Check<String> {
    TOKEN.check(s)?;
    Ok(s.to_owned())
}

/// A client's id for a message it sends.
pub fn client_message_id(s: &str) -> Check<String> {
    CLIENT_MESSAGE_ID.check(s)?;
    Ok(s.to_owned())
}

/// The widget's visitor identifier.
pub fn visitor_uuid(s: &str) -> Check<String> {
    VISITOR_UUID.check(s)?;
    Ok(s.to_owned())
}

/// A name that may be left out: trimmed, blank counts as not given.
pub fn name(s: &str) -> Check<Option<String>> {
    optional(&NAME, s)
}

/// A name that must be given, trimmed.
pub fn required_name(s: &str) -> Check<String> {
    REQUIRED_NAME.check(s)?;
    Ok(s.trim().to_owned())
}

/// Free text under `rule`, trimmed; blank counts as not given.
pub fn optional(rule: &Rule, s: &str) -> Check<Option<String>> {
    rule.check(s)?;
    let t = s.trim();
    Ok((!t.is_empty()).then(|| t.to_owned()))
}

/// A canned response's shortcut, in lower case.
pub fn shortcut(s: &str) -> Check<String> {
    SHORTCUT.check(s)?;
    Ok(s.to_ascii_lowercase())
}

/// A message body, trimmed.
pub fn message_body(s: &str) -> Check<String> {
    MESSAGE_BODY.check(s)?;
    Ok(s.trim().to_owned())
}

/// An email address, lower-cased in its domain part.
pub fn email(s: &str) -> Check<String> {
    EMAIL.check(s)?;
    let s = s.trim_matches(' ');
    let (local, domain) = s.rsplit_once('@').ok_or_else(|| EMAIL.message.to_owned())?;
    Ok(format!("{local}@{}", domain.to_ascii_lowercase()))
}

/// An address as limits and uniqueness rules compare it: the whole of it
/// lower-cased, since nobody runs mailboxes that differ only in case.
pub fn email_key(address: &str) -> String {
    address.trim().to_lowercase()
}

/// Whether two email addresses are the same mailbox for Parley's rules.
pub fn same_email(a: &str, b: &str) -> bool {
    email_key(a) == email_key(b)
}

/// A phone number in E.164 form.
pub fn phone(s: &str) -> Check<String> {
    PHONE.check(s)?;
    Ok(s.trim_matches(' ').to_owned())
}

/// A page address as the widget reports it: kept as sent, with its host
/// when it has one the URL standard can read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageUrl {
    pub url: String,
    pub host: Option<String>,
}

/// An absolute http(s) URL of at most 2,048 characters, kept without its
/// fragment: what follows `#` may be what a page keeps to itself (the
/// sign-in tokens of single-page apps), and nothing here needs it.
pub fn page_url(s: &str) -> Check<PageUrl> {
    PAGE_URL.check(s)?;
    let url = s.split('#').next().unwrap_or(s).to_owned();
    let host =
        Url::parse(&url).ok().and_then(|u| u.host_str().map(|h| h.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase()));
    Ok(PageUrl { url, host })
}

/// A DNS host name (lower-cased, without a trailing dot).
pub fn domain(s: &str) -> Check<String> {
    DOMAIN.check(s)?;
    Ok(s.trim_end_matches('.').to_ascii_lowercase())
}

/// A colour, lower-cased.
pub fn colour(s: &str) -> Check<String> {
    COLOUR.check(s)?;
    Ok(s.to_ascii_lowercase())
}

/// A verification code, without the spaces a paste may bring.
pub fn code(s: &str) -> Check<String> {
    CODE.check(s)?;
    Ok(s.trim_matches(' ').to_owned())
}

/// A tenant slug: 2 to 63 of `a-z`, `0-9` and `-`, starting with a letter
/// or digit.
pub fn slug(s: &str) -> Check<String> {
    let ok =
        (2..=63).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') && !s.starts_with('-');
    if ok { Ok(s.to_owned()) } else { Err("must be 2 to 63 characters of a-z, 0-9 and -".into()) }
}

/// A new password: 10 to 1,024 characters.
pub fn new_password(s: &str) -> Check<String> {
    NEW_PASSWORD.check(s)?;
    Ok(s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        for rule in [
            &TOKEN,
            &VISITOR_UUID,
            &REQUIRED_NAME,
            &NAME,
            &SHORT_TEXT,
            &LONG_TEXT,
            &NOTE,
            &MESSAGE_BODY,
            &SHORTCUT,
            &SEARCH_TEXT,
            &EMAIL,
            &PHONE,
            &PAGE_URL,
            &DOMAIN,
            &COLOUR,
            &PASSWORD,
            &NEW_PASSWORD,
            &CODE,
            &VISITOR_CURSOR,
            &PUSH_TOKEN,
            &LOCALE,
        ] {
            assert!(Regex::new(rule.pattern).is_ok(), "{}", rule.pattern);
        }
    }

    #[test]
    fn emails() {
        assert_eq!(email("Ann@Example.COM").unwrap(), "Ann@example.com");
        assert_eq!(email(" ann@example.com ").unwrap(), "ann@example.com");
        let local_64 = format!("{}@example.com", "a".repeat(64));
        assert!(email(&local_64).is_ok(), "a local part of 64 characters");
        let long_domain = format!("ann@{}.com", vec!["d".repeat(63); 4].join("."));
        assert_eq!(long_domain.len(), 4 + 4 * 63 + 3 + 4);
        let at_most = format!("an@{}.com", vec!["d".repeat(61); 4].join("."));
        assert_eq!(at_most.len(), 254);
        assert!(email(&at_most).is_ok(), "254 characters in all");
        assert!(email("a..b@x.com").is_ok() && email("a.b.c@x.com").is_ok());
        let local_65 = format!("{}@example.com", "a".repeat(65));
        let dotted_65 = format!("{}@example.com", ["a".repeat(32), "b".repeat(32)].join("."));
        for bad in [
            local_65.as_str(),
            dotted_65.as_str(),
            long_domain.as_str(),
            "",
            "ann",
            "ann@",
            "@x.com",
            "ann@localhost",
            "a b@x.com",
            "ann@-x.com",
            ".a@x.com",
            "a.@x.com",
            "a@x.com\n",
        ] {
            assert!(email(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn phones() {
        assert!(phone("+14155550123").is_ok());
        for bad in ["14155550123", "+0123", "+1", "+1234567890123456", "+1-415", "+14155550123\n"] {
            assert!(phone(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn urls() {
        let u = page_url("https://Example.com/a?b=c#access_token=secret").unwrap();
        assert_eq!(u.host.as_deref(), Some("example.com"));
        assert_eq!(u.url, "https://Example.com/a?b=c", "the fragment is dropped");
        assert_eq!(page_url("http://127.0.0.1:8080/").unwrap().host.as_deref(), Some("127.0.0.1"));
        assert_eq!(page_url("http://999.1.1.1/").unwrap().host, None, "kept, though no host can be read from it");
        for bad in
            ["example.com", "ftp://example.com", "javascript:alert(1)", "/relative", "http://", "https://a b", "HTTP://x", "http://x/\"<b>"]
        {
            assert!(page_url(bad).is_err(), "{bad}");
        }
        assert!(page_url(&format!("https://e.com/{}", "a".repeat(2100))).is_err());
    }

    #[test]
    fn bodies_are_trimmed_and_bounded() {
        assert_eq!(message_body("  hi \n").unwrap(), "hi");
        assert!(message_body(" \n\t\u{3000} ").is_err());
        assert!(message_body(&"é".repeat(5000)).is_ok());
        assert!(message_body(&"é".repeat(5001)).is_err());
        assert!(message_body("a\0b").is_err());
        assert!(message_body("a\u{1}b").is_err(), "control characters are refused");
        assert!(message_body("line\r\nbreak\ttab").is_ok());
    }

    #[test]
    fn names() {
        assert_eq!(name("  Ann ").unwrap().as_deref(), Some("Ann"));
        assert_eq!(name("   ").unwrap(), None, "blank is not given");
        assert!(name("a\u{7}b").is_err());
        assert!(name(&"x".repeat(256)).is_err());
        assert!(required_name(" ").is_err());
        assert_eq!(required_name(" Shop ").unwrap(), "Shop");
    }

    #[test]
    fn uuids() {
        assert!(visitor_uuid("0b7f2c1e-visitor").is_ok());
        assert!(visitor_uuid("").is_err());
        assert!(visitor_uuid("   ").is_err());
        assert!(visitor_uuid("a\u{7}b").is_err());
        assert!(visitor_uuid(&"x".repeat(129)).is_err());
    }

    #[test]
    fn domains_and_colours() {
        assert_eq!(domain("Shop.Example.com.").unwrap(), "shop.example.com");
        for bad in ["", "-x.com", "a..b", "a b", " x.com"] {
            assert!(domain(bad).is_err(), "{bad:?}");
        }
        assert_eq!(colour("#0F766E").unwrap(), "#0f766e");
        assert!(colour("blue").is_err());
    }
}
