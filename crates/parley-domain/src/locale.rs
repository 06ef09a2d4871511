//! The widget's languages: its own words in each, which one a visitor
//! gets, and which way it is written.
//!
//! The words live in `locales/<code>.json`, one flat object per language
//! with the keys of `en.json`, compiled in. The configuration hands the
//! widget the words of its language, so the script stays small and a new
//! language is one file here. The server writes in them too (the
//! automatic reply outside business hours).

use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Each language: its code, its words, and whether it is written right
/// to left. English first: it is the fallback.
const TABLE: [(&str, &str, bool); 14] = [
    ("en", include_str!("locales/en.json"), false),
    ("de", include_str!("locales/de.json"), false),
    ("fr", include_str!("locales/fr.json"), false),
    ("es", include_str!("locales/es.json"), false),
    ("pt", include_str!("locales/pt.json"), false),
    ("it", include_str!("locales/it.json"), false),
    ("nl", include_str!("locales/nl.json"), false),
    ("pl", include_str!("locales/pl.json"), false),
    ("tr", include_str!("locales/tr.json"), false),
    ("ru", include_str!("locales/ru.json"), false),
    ("ja", include_str!("locales/ja.json"), false),
    ("zh-CN", include_str!("locales/zh-CN.json"), false),
    ("ar", include_str!("locales/ar.json"), true),
    ("he", include_str!("locales/he.json"), true),
];

/// The languages there are words for, as `TABLE` lists them.
pub const LANGUAGES: [&str; 14] = {
    let mut codes = [""; 14];
    let mut i = 0;
    while i < TABLE.len() {
        codes[i] = TABLE[i].0;
        i += 1;
    }
    codes
};

/// One language's words, by key.
pub type Words = BTreeMap<String, String>;

fn all() -> &'static [Words; 14] {
    static ALL: OnceLock<[Words; 14]> = OnceLock::new();
    // The files are checked by this module's tests: one that does not
    // parse is empty here rather than a panic in a request.
    ALL.get_or_init(|| TABLE.map(|(_, text, _)| serde_json::from_str(text).unwrap_or_default()))
}

/// The words of `language` (one of [`LANGUAGES`]; English otherwise).
pub fn words(language: &str) -> &'static Words {
    &all()[index(language)]
}

/// The words the widget shows, without those only the server writes
/// (`auto_reply…`): what the configuration hands a browser.
pub fn widget_words(language: &str) -> &'static Words {
    static WIDGET: OnceLock<[Words; 14]> = OnceLock::new();
    let widget = WIDGET.get_or_init(|| {
        all().clone().map(|mut w| {
            w.retain(|key, _| !key.starts_with(SERVER_ONLY));
            w
        })
    });
    &widget[index(language)]
}

/// The prefix of the keys only the server writes.
const SERVER_ONLY: &str = "auto_reply";

fn index(language: &str) -> usize {
    LANGUAGES.iter().position(|l| *l == language).unwrap_or(0)
}

/// One of the words of `language`, with `{name}` places filled from `args`.
pub fn text(language: &str, key: &str, args: &[(&str, &str)]) -> String {
    let template = words(language).get(key).or_else(|| words("en").get(key)).map_or(key, String::as_str);
    args.iter().fold(template.to_owned(), |text, (name, value)| text.replace(&format!("{{{name}}}"), value))
}

/// `ltr` or `rtl`.
pub fn direction(language: &str) -> &'static str {
    if TABLE.iter().any(|(code, _, rtl)| *rtl && *code == language) { "rtl" } else { "ltr" }
}

/// The supported language a tag names: itself, else its language alone
/// (`de-AT` is `de`, `pt-BR` is `pt`, any Chinese is `zh-CN`).
pub fn supported(tag: &str) -> Option<&'static str> {
    let tag = tag.trim();
    if let Some(exact) = LANGUAGES.iter().find(|l| l.eq_ignore_ascii_case(tag)) {
        return Some(exact);
    }
    let primary = tag.split(['-', '_']).next()?.to_ascii_lowercase();
    match primary.as_str() {
        "zh" => Some("zh-CN"),
        // Hebrew's old code, still sent by some browsers.
        "iw" => Some("he"),
        p => LANGUAGES.iter().find(|l| **l == p).copied(),
    }
}

/// The language a visitor gets: the site's, if it set one; else the
/// first of the browser's (`accepted`, comma-separated, best first, as
/// `navigator.languages` or `Accept-Language` without weights) that is
/// supported; else English.
pub fn choose(site: Option<&str>, accepted: &str) -> &'static str {
    site.and_then(supported)
        .or_else(|| accepted.split(',').take(20).filter_map(|t| supported(t.split(';').next().unwrap_or_default())).next())
        .unwrap_or("en")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn places(text: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut rest = text;
        while let Some(start) = rest.find('{') {
            let end = rest[start..].find('}').map_or(rest.len(), |e| start + e + 1);
            out.insert(rest[start..end].to_owned());
            rest = &rest[end..];
        }
        out
    }

    #[test]
    fn every_language_has_every_word_with_the_same_places() {
        let english: Words = serde_json::from_str(TABLE[0].1).expect("en.json");
        for (language, text, _) in TABLE {
            let words: Words = serde_json::from_str(text).unwrap_or_else(|e| panic!("{language}.json: {e}"));
            let keys: BTreeSet<&String> = words.keys().collect();
            assert_eq!(keys, english.keys().collect(), "{language}.json has the keys of en.json");
            for (key, value) in &words {
                assert!(!value.trim().is_empty(), "{language}.{key} is empty");
                assert_eq!(places(value), places(&english[key]), "{language}.{key}: {value}");
            }
        }
    }

    #[test]
    fn the_site_then_the_browser_choose_and_english_is_the_rest() {
        assert_eq!(choose(None, "de-AT,de;q=0.9,en"), "de");
        assert_eq!(choose(None, "sv-SE, pt-BR"), "pt");
        assert_eq!(choose(None, "zh-TW"), "zh-CN");
        assert_eq!(choose(None, "sv,fi"), "en");
        assert_eq!(choose(None, ""), "en");
        assert_eq!(choose(Some("ar"), "de"), "ar");
        assert_eq!(choose(Some("xx"), "ja"), "ja", "a site language that is not supported leaves the browser's");
        assert_eq!(direction("he"), "rtl");
        assert_eq!(direction("de"), "ltr");
        assert_eq!(text("de", "code_sent", &[("target", "a***@example.com")]).matches("a***@example.com").count(), 1);
        assert_eq!(text("xx", "send", &[]), "Send");
    }
}
