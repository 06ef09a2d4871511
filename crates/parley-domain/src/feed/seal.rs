//! Visitors' cursors, sealed.
//!
//! An operator's cursor shows where in the tenant's feed it stands; a
//! visitor holding one could watch the tenant's activity move, since the
//! installation token that opens a conversation is public. So a visitor
//! is given its cursor encrypted and authenticated with AES-SIV (RFC
//! 5297), bound to its conversation: the text changes only when the
//! cursor does (SIV is deterministic), tells nothing of the position or
//! time inside, and one that was forged, altered or taken from another
//! conversation does not open.

use aes_siv::aead::KeyInit;
use aes_siv::siv::Aes128Siv;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::{Cursor, Position};
use crate::clock::Timestamp;
use crate::model::ConversationId;

/// Sealed text: 24 bytes of cursor and a 16-byte tag, in URL-safe base64
/// (the shape `validate::VISITOR_CURSOR` states).
const SEALED_CHARS: usize = 54;

#[derive(Clone)]
pub struct CursorSeal {
    key: [u8; 32],
}

impl std::fmt::Debug for CursorSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorSeal(..)")
    }
}

impl CursorSeal {
    /// `key`: two AES-128 keys, the first for the tag, the second for the
    /// encryption (RFC 5297).
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    fn cipher(&self) -> Aes128Siv {
        Aes128Siv::new(&self.key.into())
    }

    /// The text a visitor of `conversation` holds for `cursor`.
    pub fn seal(&self, conversation: ConversationId, cursor: Cursor) -> String {
        let mut plain = [0u8; 24];
        plain[..8].copy_from_slice(&cursor.position.tx.to_be_bytes());
        plain[8..16].copy_from_slice(&cursor.position.id.to_be_bytes());
        plain[16..].copy_from_slice(&cursor.at.as_millis().to_be_bytes());
        match self.cipher().encrypt([conversation.0.to_be_bytes()], &plain) {
            Ok(sealed) => URL_SAFE_NO_PAD.encode(sealed),
            // Sealing fails only with more associated data than SIV takes,
            // and one item cannot be: were it to, a text that never opens
            // sends the client back to reload, which is safe.
            Err(_) => String::new(),
        }
    }

    /// The cursor inside `text`, if this service sealed it for
    /// `conversation`.
    pub fn open(&self, conversation: ConversationId, text: &str) -> Option<Cursor> {
        if text.len() != SEALED_CHARS {
            return None;
        }
        let sealed = URL_SAFE_NO_PAD.decode(text).ok()?;
        let plain = self.cipher().decrypt([conversation.0.to_be_bytes()], &sealed).ok()?;
        let number = |range: std::ops::Range<usize>| plain.get(range).and_then(|b| b.try_into().ok()).map(i64::from_be_bytes);
        Some(Cursor { position: Position { tx: number(0..8)?, id: number(8..16)? }, at: Timestamp::from_millis(number(16..24)?) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seal() -> CursorSeal {
        CursorSeal::new([3; 32])
    }

    const C: Cursor = Cursor { position: Position { tx: 751, id: 12_345 }, at: Timestamp::from_millis(1_767_225_600_000) };

    #[test]
    fn a_sealed_cursor_opens_for_its_conversation_only() {
        let text = seal().seal(ConversationId(7), C);
        assert_eq!(text.len(), SEALED_CHARS);
        assert!(crate::validate::VISITOR_CURSOR.check(&text).is_ok(), "the shape a query may carry");
        assert_eq!(seal().open(ConversationId(7), &text), Some(C));
        assert_eq!(seal().open(ConversationId(8), &text), None, "another conversation's");
        assert_eq!(CursorSeal::new([4; 32]).open(ConversationId(7), &text), None, "another key's");
    }

    #[test]
    fn the_text_is_the_same_for_the_same_cursor_and_shows_nothing_of_it() {
        let a = seal().seal(ConversationId(7), C);
        assert_eq!(a, seal().seal(ConversationId(7), C), "deterministic: it moves only when the cursor does");
        let next = Cursor { position: Position { tx: 751, id: 12_346 }, ..C };
        let b = seal().seal(ConversationId(7), next);
        assert_ne!(a, b);
        let differing = a.bytes().zip(b.bytes()).filter(|(x, y)| x != y).count();
        assert!(differing > SEALED_CHARS / 2, "a neighbouring cursor looks unrelated: {a} {b}");
        for part in ["751", "12345", "mjuo"] {
            assert!(!a.contains(part));
        }
    }

    #[test]
    fn altered_or_malformed_texts_do_not_open() {
        let text = seal().seal(ConversationId(7), C);
        for i in 0..text.len() {
            let mut bytes = text.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(bytes).unwrap();
            assert_eq!(seal().open(ConversationId(7), &altered), None, "{altered}");
        }
        for bad in ["", "0-0-1", &text[1..], &format!("{text}A"), &text.replace(|c: char| c.is_ascii_digit(), "+")] {
            assert_eq!(seal().open(ConversationId(7), bad), None, "{bad}");
        }
    }
}
