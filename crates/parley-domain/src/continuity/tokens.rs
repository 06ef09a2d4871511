//! The tokens a visitor's emails carry: the reply address that routes an
//! answer back to its conversation, and the one-click unsubscribe link.
//! Both are the conversation's id with a MAC under the installation's
//! visitor-mail key, so nothing is stored for them and nobody can make one
//! for a conversation that is not theirs. Lower-case hex, because mail
//! servers may fold the case of an address's local part.

use hmac::Mac;

use crate::ids::hex;
use crate::keys::{Purpose, ServerKeys, hmac};
use crate::model::ConversationId;

/// The local part's prefix before the token (`reply+…@domain`).
pub const REPLY_PREFIX: &str = "reply+";

/// Bytes of MAC kept: 128 bits.
const MAC_LEN: usize = 16;

#[derive(Clone)]
pub struct MailTokens {
    key: [u8; 32],
}

impl std::fmt::Debug for MailTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MailTokens(..)")
    }
}

/// What a token is for: the same conversation gets a different MAC for
/// each, so an unsubscribe link cannot be used as a reply address.
#[derive(Clone, Copy)]
enum Use {
    Reply,
    Unsubscribe,
}

impl MailTokens {
    pub fn new(keys: &ServerKeys) -> Self {
        Self { key: *keys.key(Purpose::VisitorMail) }
    }

    fn mac(&self, what: Use, conversation: ConversationId) -> [u8; MAC_LEN] {
        let mut mac = hmac(&self.key);
        mac.update(match what {
            Use::Reply => b"reply\0",
            Use::Unsubscribe => b"unsubscribe\0",
        });
        mac.update(&conversation.0.to_be_bytes());
        let full: [u8; 32] = mac.finalize().into_bytes().into();
        let mut kept = [0u8; MAC_LEN];
        kept.copy_from_slice(&full[..MAC_LEN]);
        kept
    }

    fn token(&self, what: Use, conversation: ConversationId) -> String {
        format!("{}-{}", conversation.0, hex(&self.mac(what, conversation)))
    }

    fn open(&self, what: Use, token: &str) -> Option<ConversationId> {
        let (id, mac) = token.split_once('-')?;
        // One spelling per conversation: no leading zeros.
        if id.is_empty() || id.len() > 19 || id.starts_with('0') || !id.bytes().all(|b| b.is_ascii_digit()) || mac.len() != MAC_LEN * 2 {
            return None;
        }
        let conversation = ConversationId(id.parse().ok()?);
        let expected = hex(&self.mac(what, conversation));
        let same = subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), mac.to_ascii_lowercase().as_bytes());
        bool::from(same).then_some(conversation)
    }

    /// `reply+<token>@domain`.
    pub fn reply_address(&self, conversation: ConversationId, domain: &str) -> String {
        format!("{REPLY_PREFIX}{}@{domain}", self.token(Use::Reply, conversation))
    }

    /// The conversation an address of `domain` answers, if it is one of
    /// its reply addresses (the domain compared without case).
    pub fn reply_conversation(&self, address: &str, domain: &str) -> Option<ConversationId> {
        let (local, at) = address.trim().rsplit_once('@')?;
        if !at.eq_ignore_ascii_case(domain) {
            return None;
        }
        let local = local.to_ascii_lowercase();
        self.open(Use::Reply, local.strip_prefix(REPLY_PREFIX)?)
    }

    pub fn unsubscribe_token(&self, conversation: ConversationId) -> String {
        self.token(Use::Unsubscribe, conversation)
    }

    pub fn unsubscribe_conversation(&self, token: &str) -> Option<ConversationId> {
        self.open(Use::Unsubscribe, token)
    }
}

/// Whether `text` holds something shaped like one of these tokens (the
/// conversation's number, a dash, the MAC in hex).
pub fn mentions_token(text: &str) -> bool {
    static TOKEN: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let pattern = format!(r"\b[1-9][0-9]{{0,18}}-[0-9a-f]{{{}}}\b", MAC_LEN * 2);
    TOKEN.get_or_init(|| regex::Regex::new(&pattern).ok()).as_ref().is_some_and(|t| t.is_match(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(secret: u8) -> MailTokens {
        MailTokens::new(&ServerKeys::from_secret([secret; 32]))
    }

    #[test]
    fn a_reply_address_routes_back_to_its_conversation_only() {
        let t = tokens(1);
        let address = t.reply_address(ConversationId(42), "in.example.com");
        assert!(address.starts_with("reply+42-") && address.ends_with("@in.example.com"), "{address}");
        let local = address.split('@').next().unwrap();
        assert!(local.len() <= 64, "a local part is at most 64 octets");
        assert_eq!(t.reply_conversation(&address, "in.example.com"), Some(ConversationId(42)));
        assert_eq!(t.reply_conversation(&address.to_uppercase(), "IN.EXAMPLE.COM"), Some(ConversationId(42)), "case folded");
        assert_eq!(t.reply_conversation(&address, "other.example.com"), None);
        assert_eq!(tokens(2).reply_conversation(&address, "in.example.com"), None, "another installation's key");
        assert_eq!(t.reply_conversation(&address.replacen("reply+42-", "reply+0042-", 1), "in.example.com"), None);
        let forged = address.replacen("reply+42-", "reply+43-", 1);
        assert_eq!(t.reply_conversation(&forged, "in.example.com"), None);
        for bad in ["reply+@in.example.com", "reply+42@in.example.com", "reply+x-00@in.example.com", "ann@in.example.com", "no-at"] {
            assert_eq!(t.reply_conversation(bad, "in.example.com"), None, "{bad}");
        }
    }

    #[test]
    fn an_unsubscribe_token_is_not_a_reply_token() {
        let t = tokens(1);
        let unsubscribe = t.unsubscribe_token(ConversationId(7));
        assert_eq!(t.unsubscribe_conversation(&unsubscribe), Some(ConversationId(7)));
        assert_eq!(t.reply_conversation(&format!("reply+{unsubscribe}@d.example"), "d.example"), None);
        assert_eq!(t.unsubscribe_conversation("7-"), None);
        assert_eq!(t.unsubscribe_conversation(&format!("{unsubscribe}0")), None);
    }
}
