//! The few server-rendered pages (sandbox, magic link) put values into HTML
//! text and quoted attributes; this is the one escaper they share.

/// Escapes text for HTML content and double- or single-quoted attributes.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(super::escape(r#"<a href="x">'&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    }
}
