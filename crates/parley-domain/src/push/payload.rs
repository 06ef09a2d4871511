//! What a push says. By default nothing a visitor wrote: the provider
//! (Apple, Google, a browser vendor) carries the payload, and message
//! text is the installation's to keep unless its operator allows it.

use super::{ClaimedPush, PushReason};

/// `PARLEY_PUSH_CONTENT`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PushContent {
    /// A fixed title, the conversation id and the badge.
    #[default]
    Minimal,
    /// The visitor's name and the start of the message as well.
    Full,
}

impl PushContent {
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Minimal, Self::Full].into_iter().find(|c| c.as_str() == s)
    }

    /// As `PARLEY_PUSH_CONTENT` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minimal => "minimal",
            Self::Full => "full",
        }
    }
}

/// How much of a message a full payload shows, in characters.
pub const EXCERPT_CHARS: usize = 120;

/// One push, ready for any provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notification {
    pub title: String,
    /// The message's start (full payloads only).
    pub body: Option<String>,
    /// The conversation's id in the operator API: what the app opens.
    pub conversation_id: i64,
    pub reason: &'static str,
    /// The operator's unread conversations.
    pub badge: u64,
}

impl Notification {
    pub fn of(push: &ClaimedPush, content: PushContent) -> Self {
        let minimal = match push.reason {
            PushReason::Conversation => "New conversation",
            PushReason::Message => "New message",
            PushReason::Assigned => "Conversation assigned to you",
        };
        let (title, body) = match content {
            PushContent::Minimal => (minimal.to_owned(), None),
            PushContent::Full => {
                let name = push.visitor_name.as_deref().map(str::trim).filter(|n| !n.is_empty()).unwrap_or("Visitor");
                let title = match push.reason {
                    PushReason::Assigned => format!("{minimal}: {name}"),
                    _ => name.to_owned(),
                };
                // A message of files alone says so rather than nothing.
                let body = push
                    .message
                    .as_deref()
                    .filter(|_| push.reason != PushReason::Assigned)
                    .map(|m| if m.trim().is_empty() { "\u{1f4ce} A file".to_owned() } else { excerpt(m) });
                (title, body)
            }
        };
        Self { title, body, conversation_id: push.conversation_id.0, reason: push.reason.as_str(), badge: push.badge }
    }

    /// The payload apps and the service worker read, and the relay
    /// forwards (minimal pushes carry no `body`).
    pub fn data(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "title": self.title,
            "conversation_id": self.conversation_id,
            "reason": self.reason,
            "badge": self.badge,
        });
        if let Some(body) = &self.body {
            v["body"] = body.clone().into();
        }
        v
    }
}

fn excerpt(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(EXCERPT_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::*;
    use crate::push::PushTarget;

    fn push(reason: PushReason, message: &str) -> ClaimedPush {
        ClaimedPush {
            id: PushId(1),
            tenant_id: TenantId(1),
            operator_id: OperatorId(2),
            operator_role: Role::Agent,
            conversation_id: ConversationId(42),
            revision: 1,
            attempts: 0,
            reason,
            target: PushTarget {
                device_id: DeviceId(3),
                platform: Platform::Ios,
                token: "t".into(),
                web_keys: None,
                app_id: None,
                locale: None,
                pushed_before: false,
            },
            visitor_name: Some("Ann".into()),
            message: Some(message.into()),
            badge: 3,
            unread_here: true,
            live: true,
            leased_until: crate::Timestamp::from_millis(0),
        }
    }

    #[test]
    fn minimal_carries_no_visitor_text() {
        let n = Notification::of(&push(PushReason::Message, "my card number is 4111"), PushContent::Minimal);
        assert_eq!(n.title, "New message");
        assert_eq!(n.body, None);
        let data = n.data().to_string();
        assert!(!data.contains("4111") && !data.contains("Ann"), "{data}");
        assert_eq!(n.badge, 3);
        assert_eq!(n.conversation_id, 42);
    }

    #[test]
    fn full_shows_the_name_and_the_first_120_characters() {
        let long = "é".repeat(130);
        let n = Notification::of(&push(PushReason::Message, &long), PushContent::Full);
        assert_eq!(n.title, "Ann");
        assert_eq!(n.body.as_deref(), Some(format!("{}…", "é".repeat(120)).as_str()));
        let n = Notification::of(&push(PushReason::Assigned, "hi"), PushContent::Full);
        assert_eq!((n.title.as_str(), n.body), ("Conversation assigned to you: Ann", None));
    }
}
