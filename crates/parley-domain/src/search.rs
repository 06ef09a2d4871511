//! Searching conversations by what was said in them and who said it:
//! every word of the query must be a word of one message, or of the
//! visitor's name and email, the last word the start of one (through each
//! database's full-text indexes). Results follow the inbox's scope (an agent finds only its
//! sites' conversations), the latest match first.

use crate::error::DomainError;
use crate::model::{ConversationDetails, Message};

/// Words a query keeps: more narrow nothing down in practice, and each
/// costs the index a lookup.
pub const MAX_WORDS: usize = 8;
/// The longest word kept, in characters.
const MAX_WORD_CHARS: usize = 64;
/// The shortest word that matches the start of words; a shorter one
/// matches whole words only: a one-letter prefix would match nearly every
/// message, and cost the index a read of all of them.
const MIN_PREFIX_CHARS: usize = 2;

/// Whether the `i`th of `words` matches the start of words, or whole
/// words only. Only the last may be partial, as one types it: an index
/// reads every word a prefix starts (one per visitor where emails start
/// with a name), while a whole word is one entry of it.
pub fn as_prefix(words: &[String], i: usize) -> bool {
    i + 1 == words.len() && words[i].chars().count() >= MIN_PREFIX_CHARS
}
/// Characters of context a snippet shows around the first word found.
const SNIPPET_CHARS: usize = 140;

/// A query as the stores take it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchQuery {
    /// Lower case, letters and digits only: what the full-text index holds.
    pub words: Vec<String>,
}

impl SearchQuery {
    /// `q` split into words of letters and decimal digits, as both
    /// databases' indexes split text (`½` or `²` make no word there). A
    /// query without any is refused: there would be nothing to look for.
    pub fn parse(q: &str) -> Result<Self, DomainError> {
        let words: Vec<String> = q
            .split(|c: char| !(c.is_alphabetic() || c.is_ascii_digit()))
            .filter(|w| !w.is_empty())
            .map(|w| lower(w).chars().take(MAX_WORD_CHARS).collect())
            .take(MAX_WORDS)
            .collect();
        if words.is_empty() {
            return Err(DomainError::invalid("q", "must contain a letter or a digit"));
        }
        Ok(Self { words })
    }
}

/// `word` in lower case as the indexes fold it: a letter at a time, so a
/// dotted capital I is an `i`, not an `i` and a combining dot.
fn lower(word: &str) -> String {
    word.chars().map(|c| if c == 'İ' { 'i' } else { c.to_lowercase().next().unwrap_or(c) }).collect()
}

/// One conversation found, with its latest message that matched (none
/// when only the visitor did).
#[derive(Clone, Debug)]
pub struct SearchHit {
    pub conversation: ConversationDetails,
    pub message: Option<Message>,
}

/// A page of results, and whether another follows.
#[derive(Clone, Debug)]
pub struct SearchPage {
    pub hits: Vec<SearchHit>,
    pub more: bool,
}

/// The part of `body` around the first of `words` that starts a word, on
/// one line, with `…` where it was cut: what a result shows of its
/// message.
pub fn snippet(body: &str, words: &[String]) -> String {
    let flat: Vec<char> = body.split_whitespace().collect::<Vec<_>>().join(" ").chars().collect();
    let found = word_starts(&flat, words).first().map(|&(at, _)| at);
    let start = found.map_or(0, |at| at.saturating_sub(SNIPPET_CHARS / 3));
    let end = (start + SNIPPET_CHARS).min(flat.len());
    let start = end.saturating_sub(SNIPPET_CHARS).min(start);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&flat[start..end]);
    if end < flat.len() {
        out.push('…');
    }
    out
}

/// Where one of `words` starts a word of `text`, as (character index,
/// length in characters), the longest word at each place, left to right:
/// what a snippet centres on and a page marks. Lower-casing can change a
/// character's length; where it did, nothing is found.
pub fn word_starts(text: &[char], words: &[String]) -> Vec<(usize, usize)> {
    let lower: Vec<char> = text.iter().flat_map(|c| c.to_lowercase()).collect();
    if lower.len() != text.len() {
        return Vec::new();
    }
    let words: Vec<Vec<char>> = words.iter().map(|w| w.chars().collect()).collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lower.len() {
        let starts_word = i == 0 || !lower[i - 1].is_alphanumeric();
        match words.iter().filter(|w| starts_word && !w.is_empty() && lower[i..].starts_with(w)).map(Vec::len).max() {
            Some(len) => {
                found.push((i, len));
                i += len;
            }
            None => i += 1,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_keeps_its_words_in_lower_case() {
        let q = SearchQuery::parse("  Refund, ORDER #1234!  ").unwrap();
        assert_eq!(q.words, ["refund", "order", "1234"]);
        assert_eq!(SearchQuery::parse("Émile Zoë").unwrap().words, ["émile", "zoë"]);
        assert_eq!(SearchQuery::parse("İstanbul ½ x²").unwrap().words, ["istanbul", "x"], "as the indexes split");
        let words = |w: &[&str]| w.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        assert!(as_prefix(&words(&["ab"]), 0) && !as_prefix(&words(&["a"]), 0));
        assert!(!as_prefix(&words(&["ab", "cd"]), 0) && as_prefix(&words(&["ab", "cd"]), 1), "the last word only");
        assert!(SearchQuery::parse(" -- !! ").is_err());
        assert_eq!(SearchQuery::parse(&"a ".repeat(20)).unwrap().words.len(), MAX_WORDS);
        assert_eq!(SearchQuery::parse(&"x".repeat(100)).unwrap().words[0].len(), 64);
    }

    #[test]
    fn a_snippet_shows_the_first_word_found_in_its_context() {
        let words = vec!["refund".to_owned()];
        assert_eq!(snippet("Hello,\n\nI want a   refund please", &words), "Hello, I want a refund please");
        let long = format!("{} the refund is late {}", "word ".repeat(60), "more ".repeat(60));
        let s = snippet(&long, &words);
        assert!(s.starts_with('…') && s.ends_with('…') && s.contains("the refund is late"), "{s}");
        assert!(s.chars().count() <= SNIPPET_CHARS + 2);
        assert_eq!(snippet("prefunded", &words), "prefunded", "inside a word is not a match: the start is shown");
    }
}
