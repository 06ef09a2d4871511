//! The few server-rendered pages (sandbox, magic link, unsubscribe) put values into HTML
//! text and quoted attributes; this is the one escaper they share.

/// Escapes text for HTML content and double- or single-quoted attributes.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

/// A small page of its own (a magic link's, an unsubscribe link's): the
/// title, and `body`, which the caller has escaped.
pub fn simple_page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><style>body{{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#1f2937}}\
         button{{font:inherit;padding:.6rem 1.2rem;border:0;border-radius:8px;background:#2563eb;color:#fff;cursor:pointer}}</style>\
         </head><body><h1>{title}</h1>{body}</body></html>"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(super::escape(r#"<a href="x">'&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    }
}
