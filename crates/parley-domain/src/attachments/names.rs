//! File names as the client gave them, made safe to keep and to send back.
//!
//! A name is only ever shown and offered as the download's name: it never
//! reaches the store (keys are random) or a path. It is still cleaned, so
//! that a name cannot smuggle a path, a line break into a header, or
//! direction marks that make `invoice.exe` read as `exe.pdf`.

/// The longest name kept, in characters.
pub const MAX_NAME: usize = 255;

/// The last part of a path, without control characters or bidirectional
/// marks, trimmed, at most [`MAX_NAME`] characters; `file` when nothing
/// is left.
pub fn clean(given: &str) -> String {
    let last = given.rsplit(['/', '\\']).next().unwrap_or_default();
    let kept: String = last.chars().filter(|c| !c.is_control() && !is_direction_mark(*c)).take(MAX_NAME).collect();
    let kept = kept.trim().trim_start_matches('.').trim();
    if kept.is_empty() { "file".to_owned() } else { kept.to_owned() }
}

fn is_direction_mark(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{061c}')
}

/// A `Content-Disposition` value (RFC 6266): `disposition` with the name
/// as a quoted ASCII fallback and, when it is not plain ASCII, as UTF-8
/// in `filename*` (RFC 5987), which browsers prefer.
pub fn content_disposition(disposition: &str, name: &str) -> String {
    let fallback: String =
        name.chars().map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' && c != '%' || c == ' ' { c } else { '_' }).collect();
    if fallback == name {
        return format!("{disposition}; filename=\"{fallback}\"");
    }
    let mut encoded = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
            encoded.push(char::from(b));
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    format!("{disposition}; filename=\"{fallback}\"; filename*=UTF-8''{encoded}")
}

/// A size for people: `10 MiB`, `512 KiB`, `900 bytes`.
pub fn bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size {
            let whole = n / size;
            let tenth = (n % size) * 10 / size;
            return if tenth == 0 { format!("{whole} {unit}") } else { format!("{whole}.{tenth} {unit}") };
        }
    }
    format!("{n} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_lose_paths_controls_and_direction_marks() {
        assert_eq!(clean("../../etc/passwd"), "passwd");
        assert_eq!(clean("C:\\Users\\me\\report.pdf"), "report.pdf");
        assert_eq!(clean("a\r\nSet-Cookie: x=1.txt"), "aSet-Cookie: x=1.txt");
        assert_eq!(clean("invoice\u{202e}fdp.exe"), "invoicefdp.exe");
        assert_eq!(clean("  .hidden  "), "hidden");
        assert_eq!(clean(""), "file");
        assert_eq!(clean("/"), "file");
        assert_eq!(clean(&"é".repeat(400)).chars().count(), MAX_NAME);
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(bytes(10 * 1024 * 1024), "10 MiB");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(5 << 30), "5 GiB");
        assert_eq!(bytes(900), "900 bytes");
    }

    #[test]
    fn dispositions_quote_safely_and_carry_unicode_in_filename_star() {
        assert_eq!(content_disposition("inline", "photo 1.png"), "inline; filename=\"photo 1.png\"");
        assert_eq!(
            content_disposition("attachment", "a\"b\\c;%.txt"),
            "attachment; filename=\"a_b_c;_.txt\"; filename*=UTF-8''a%22b%5Cc%3B%25.txt"
        );
        assert_eq!(
            content_disposition("attachment", "Rechnung März.pdf"),
            "attachment; filename=\"Rechnung M_rz.pdf\"; filename*=UTF-8''Rechnung%20M%C3%A4rz.pdf"
        );
    }
}
