//! Checks for every value that comes from outside.
//!
//! Each function turns raw input into a value the domain can trust, or into
//! a sentence telling the client what is wrong. The HTTP layer runs them for
//! every field of a request before reporting, so a client learns about all
//! of its mistakes at once.

use url::Url;

pub const MAX_MESSAGE_CHARS: usize = 5_000;
pub const MAX_NAME_CHARS: usize = 255;
pub const MAX_URL_CHARS: usize = 2_048;
pub const MAX_UUID_CHARS: usize = 128;
pub const MAX_TOKEN_CHARS: usize = 128;
pub const MAX_SHORT_TEXT_CHARS: usize = 64;

pub type Check<T> = Result<T, String>;

/// An opaque public token or identifier. Unknown values are a 404 later, so
/// this only rejects what cannot possibly be one.
pub fn token(s: &str) -> Check<String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.chars().count() > MAX_TOKEN_CHARS || s.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("is not a valid token".into());
    }
    Ok(s.to_owned())
}

/// The widget's visitor identifier: 1 to 128 printable characters.
pub fn visitor_uuid(s: &str) -> Check<String> {
    let n = s.chars().count();
    if n == 0 || s.trim().is_empty() {
        return Err("must not be empty".into());
    }
    if n > MAX_UUID_CHARS {
        return Err(format!("must be at most {MAX_UUID_CHARS} characters"));
    }
    if s.chars().any(char::is_control) {
        return Err("must contain printable characters only".into());
    }
    Ok(s.to_owned())
}

/// A person's or a thing's name: trimmed, at most 255 characters. Blank
/// counts as not given.
pub fn name(s: &str) -> Check<Option<String>> {
    optional_text(s, MAX_NAME_CHARS)
}

/// A free-text field with a length bound; blank counts as not given.
pub fn optional_text(s: &str, max: usize) -> Check<Option<String>> {
    let t = s.trim();
    if t.chars().count() > max {
        return Err(format!("must be at most {max} characters"));
    }
    if t.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Err("must not contain control characters".into());
    }
    Ok((!t.is_empty()).then(|| t.to_owned()))
}

/// A message body: 1 to 5,000 characters after trimming.
pub fn message_body(s: &str) -> Check<String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("must not be blank".into());
    }
    if t.chars().count() > MAX_MESSAGE_CHARS {
        return Err(format!("must be at most {MAX_MESSAGE_CHARS} characters"));
    }
    if t.chars().any(|c| c == '\0') {
        return Err("must not contain NUL characters".into());
    }
    Ok(t.to_owned())
}

/// An email address, lower-cased in its domain part.
pub fn email(s: &str) -> Check<String> {
    const INVALID: &str = "must be a valid email address";
    let s = s.trim();
    if s.len() > 254 {
        return Err(INVALID.into());
    }
    let Some((local, domain)) = s.rsplit_once('@') else {
        return Err(INVALID.into());
    };
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local.chars().all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~.-".contains(c));
    if !local_ok || !hostname_ok(domain) || !domain.contains('.') {
        return Err(INVALID.into());
    }
    Ok(format!("{local}@{}", domain.to_ascii_lowercase()))
}

/// A phone number in E.164 form: `+` and 2 to 15 digits, no leading zero.
pub fn phone(s: &str) -> Check<String> {
    let s = s.trim();
    let digits = s.strip_prefix('+').unwrap_or("");
    let ok = (2..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) && !digits.starts_with('0');
    if ok { Ok(s.to_owned()) } else { Err("must be a phone number in E.164 form, such as +14155550123".into()) }
}

/// An absolute http(s) URL of at most 2,048 characters.
pub fn page_url(s: &str) -> Check<Url> {
    if s.chars().count() > MAX_URL_CHARS {
        return Err(format!("must be at most {MAX_URL_CHARS} characters"));
    }
    let url = Url::parse(s).map_err(|_| "must be an absolute http or https URL".to_owned())?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err("must be an absolute http or https URL".into());
    }
    Ok(url)
}

/// A DNS host name (lower-cased), as listed in a site's `domains`.
pub fn domain(s: &str) -> Check<String> {
    let d = s.trim().trim_end_matches('.').to_ascii_lowercase();
    if hostname_ok(&d) { Ok(d) } else { Err(format!("{s:?} is not a valid host name")) }
}

fn hostname_ok(d: &str) -> bool {
    !d.is_empty()
        && d.len() <= 253
        && d.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
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
    let n = s.chars().count();
    if n < 10 {
        return Err("must be at least 10 characters".into());
    }
    if n > 1024 {
        return Err("must be at most 1024 characters".into());
    }
    Ok(s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails() {
        assert_eq!(email("Ann@Example.COM").unwrap(), "Ann@example.com");
        for bad in ["", "ann", "ann@", "@x.com", "ann@localhost", "a b@x.com", "ann@-x.com", "a..b@x.com"] {
            assert!(email(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn phones() {
        assert!(phone("+14155550123").is_ok());
        for bad in ["14155550123", "+0123", "+1", "+1234567890123456", "+1-415"] {
            assert!(phone(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn urls() {
        assert!(page_url("https://example.com/a?b=c").is_ok());
        for bad in ["example.com", "ftp://example.com", "javascript:alert(1)", "/relative"] {
            assert!(page_url(bad).is_err(), "{bad}");
        }
        assert!(page_url(&format!("https://e.com/{}", "a".repeat(2100))).is_err());
    }

    #[test]
    fn bodies_are_trimmed_and_bounded() {
        assert_eq!(message_body("  hi \n").unwrap(), "hi");
        assert!(message_body(" \n\t ").is_err());
        assert!(message_body(&"é".repeat(5000)).is_ok());
        assert!(message_body(&"é".repeat(5001)).is_err());
    }

    #[test]
    fn uuids() {
        assert!(visitor_uuid("0b7f2c1e-visitor").is_ok());
        assert!(visitor_uuid("").is_err());
        assert!(visitor_uuid("a\u{7}b").is_err());
        assert!(visitor_uuid(&"x".repeat(129)).is_err());
    }
}
