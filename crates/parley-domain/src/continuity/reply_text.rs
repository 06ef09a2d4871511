//! The new text of an emailed reply: what the visitor wrote above the
//! history their mail client quoted, without their signature.
//!
//! Mail clients mark the history in a few ways, and a reply may carry any
//! of them: an attribution line before it (Gmail and Apple Mail's
//! "On …, … wrote:", sometimes wrapped over two lines, and its French,
//! German, Spanish and Dutch forms), Outlook's "-----Original Message-----"
//! or its header block ("From:" with "Sent:" or "Date:" below), a line of
//! underscores, and "> " before each quoted line. Everything from the
//! first of these is history; "> " lines are dropped wherever they stand.
//! A "-- " line starts a signature (RFC 3676), and the phone clients'
//! "Sent from my …" lines are signatures too.

/// The reply's new text, trimmed; empty when it says nothing new.
pub fn new_text(text: &str) -> String {
    let text = text.replace("\r\n", "\n");
    let lines: Vec<&str> = text.split('\n').collect();
    let mut kept: Vec<&str> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if starts_history(&lines, i) || is_signature_mark(line) {
            break;
        }
        if line.trim_start().starts_with('>') {
            continue;
        }
        kept.push(line);
    }
    while kept.last().is_some_and(|l| l.trim().is_empty() || is_phone_signature(l)) {
        kept.pop();
    }
    let start = kept.iter().position(|l| !l.trim().is_empty()).unwrap_or(kept.len());
    kept[start..].iter().map(|l| l.trim_end()).collect::<Vec<_>>().join("\n")
}

/// Whether the history starts at line `i`.
fn starts_history(lines: &[&str], i: usize) -> bool {
    let line = lines[i].trim();
    if line.is_empty() {
        return false;
    }
    if is_attribution(line) {
        return true;
    }
    // An attribution wrapped over two lines (Gmail wraps long ones).
    if let Some(next) = lines.get(i + 1)
        && opens_attribution(line)
        && !next.trim().is_empty()
        && is_attribution(&format!("{line} {}", next.trim()))
    {
        return true;
    }
    let lower = line.to_lowercase();
    if lower.contains("original message") && line.starts_with("-----") {
        return true;
    }
    if line.len() >= 20 && line.chars().all(|c| c == '_') {
        return true;
    }
    // Outlook's header block: "From:" with "Sent:" or "Date:" right below.
    if starts_with_label(line, &["from:", "von:", "de:"]) {
        return lines[i + 1..]
            .iter()
            .take(4)
            .any(|l| starts_with_label(l.trim(), &["sent:", "date:", "gesendet:", "envoyé :", "envoyé:", "enviado:"]));
    }
    false
}

fn starts_with_label(line: &str, labels: &[&str]) -> bool {
    let lower = line.trim_start_matches('*').to_lowercase();
    labels.iter().any(|l| lower.starts_with(l))
}

/// The first words of an attribution line in the languages handled.
fn opens_attribution(line: &str) -> bool {
    opens_attribution_lower(&line.to_lowercase())
}

fn opens_attribution_lower(line: &str) -> bool {
    ["on ", "le ", "am ", "el ", "op "].iter().any(|w| line.starts_with(w))
}

/// "On <date>, <name> wrote:" and its translations.
fn is_attribution(line: &str) -> bool {
    let line = line.trim_end().to_lowercase();
    let ends = ["wrote:", "a écrit :", "a écrit:", "escribió:", "schreef:"].iter().any(|end| line.ends_with(end));
    // German names the writer after the verb: "… schrieb Ann <a@b>:".
    let german = line.contains(" schrieb ") && line.ends_with(':');
    opens_attribution_lower(&line) && (ends || german)
}

fn is_signature_mark(line: &str) -> bool {
    line == "-- " || line == "--" || line == "-- \r"
}

fn is_phone_signature(line: &str) -> bool {
    let line = line.trim();
    line.starts_with("Sent from my ") || line.starts_with("Get Outlook for ") || line.starts_with("Envoyé de mon ")
}

#[cfg(test)]
mod tests {
    use super::new_text;

    #[test]
    fn gmail_history_is_removed() {
        let reply = "Thanks, that works!\r\n\r\nOn Fri, Nov 27, 2026 at 10:02 AM Acme Support <reply+1-ab@in.example.com> wrote:\r\n> Try restarting it.\r\n>\r\n";
        assert_eq!(new_text(reply), "Thanks, that works!");
    }

    #[test]
    fn a_wrapped_attribution_is_found() {
        let reply = "Yes please.\n\nOn Fri, Nov 27, 2026 at 10:02 AM Acme Support <\nreply+1-ab@in.example.com> wrote:\n\n> Shall we?\n";
        assert_eq!(new_text(reply), "Yes please.");
    }

    #[test]
    fn apple_mail_and_signatures_are_removed() {
        let reply = "Great.\nSee you.\n\n-- \nAnn Smith\nACME Corp\n\nOn 27 Nov 2026, at 10:02, Acme Support <x@y> wrote:\n\n> Hello\n";
        assert_eq!(new_text(reply), "Great.\nSee you.");
        assert_eq!(new_text("Ok\n\nSent from my iPhone\n\n> earlier"), "Ok");
    }

    #[test]
    fn outlook_history_is_removed() {
        let block = "Sounds good.\r\n\r\nFrom: Acme Support <reply+1-ab@in.example.com>\r\nSent: Friday, November 27, 2026 10:02 AM\r\nTo: Ann <ann@example.com>\r\nSubject: RE: Your conversation\r\n\r\nTry restarting it.\r\n";
        assert_eq!(new_text(block), "Sounds good.");
        let original = "Done.\n\n-----Original Message-----\nFrom: Acme\nHello\n";
        assert_eq!(new_text(original), "Done.");
        let underscores = "Done too.\n\n________________________________\nFrom: Acme\nSent: today\n";
        assert_eq!(new_text(underscores), "Done too.");
    }

    #[test]
    fn interleaved_quotes_keep_the_new_lines() {
        let reply = "> Which plan?\nThe pro one.\n> And the size?\nLarge.\n";
        assert_eq!(new_text(reply), "The pro one.\nLarge.");
    }

    #[test]
    fn other_languages_and_plain_text_stay_readable() {
        assert_eq!(new_text("Merci !\n\nLe ven. 27 nov. 2026 à 10:02, Acme <x@y> a écrit :\n> Bonjour"), "Merci !");
        assert_eq!(new_text("Danke\n\nAm Fr., 27. Nov. 2026 um 10:02 Uhr schrieb Acme <x@y>:\n> Hallo"), "Danke");
        assert_eq!(new_text("  \nFrom: here I write about where I am from: Lyon\n"), "From: here I write about where I am from: Lyon");
        assert_eq!(new_text("On my way, I wrote this without quoting.\nBye"), "On my way, I wrote this without quoting.\nBye");
        assert_eq!(new_text("> only quoted\n"), "");
    }
}
