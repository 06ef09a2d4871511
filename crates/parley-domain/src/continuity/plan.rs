//! What a due email becomes, decided when it falls due on what the
//! database says then, and when a failed one is tried again.

use super::tokens::MailTokens;
use super::{ClaimedMail, MailContext, MailKind, MailSettings, MailStep, RETRY_SCHEDULE, compose};
#[cfg(test)]
use super::{MailThread, REPLY_LIMIT, SentThread};
use crate::clock::Timestamp;
use crate::verification::channels::SendError;

/// After a failed attempt: when to try again, or `None` to give up.
pub fn retry_at(attempts: u32, error: &SendError, now: Timestamp) -> Option<Timestamp> {
    if error.permanent {
        return None;
    }
    let index = usize::try_from(attempts.saturating_sub(1)).unwrap_or(usize::MAX);
    RETRY_SCHEDULE.get(index).map(|d| now.plus(*d))
}

/// Decides what to do with a claimed email, on what the database says now.
pub fn plan(mail: &ClaimedMail, ctx: Option<&MailContext>, settings: &MailSettings, tokens: &MailTokens, now: Timestamp) -> MailStep {
    let Some(ctx) = ctx else { return MailStep::Drop("conversation gone") };
    if !settings.mail_enabled {
        return MailStep::Drop("no email channel");
    }
    if ctx.thread.unsubscribed_at.is_some() {
        return MailStep::Drop("unsubscribed");
    }
    // A transcript carries what the visitor wrote: only to the address
    // proven now. (A visitor that types another address loses its proof,
    // so this holds as long as that rule of the widget does.)
    let to = match mail.kind {
        MailKind::Reply => ctx.details.visitor.mail_address(),
        MailKind::Transcript => ctx.details.visitor.proven_email(),
    };
    let Some(to) = to else { return MailStep::Drop("no email address") };
    if mail.kind == MailKind::Reply {
        let Some(first) = ctx.messages.first() else { return MailStep::Drop("read meanwhile") };
        let due = first.created_at.plus(settings.delay);
        if due > now {
            return MailStep::Later(due);
        }
        if let Some(until) = ctx.open_until
            && until > now
        {
            return MailStep::Later(until);
        }
    } else if ctx.messages.is_empty() {
        return MailStep::Drop("nothing to send");
    }
    let (email, sent) = compose::email(mail.kind, &to, ctx, settings, tokens);
    MailStep::Send(Box::new(email), sent)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::keys::ServerKeys;
    use crate::model::*;

    const T0: Timestamp = Timestamp::from_millis(1_767_225_600_000);
    const DELAY: Duration = Duration::from_secs(120);

    fn settings() -> MailSettings {
        MailSettings {
            delay: DELAY,
            public_url: "https://chat.example.com".into(),
            inbound_domain: Some("reply.example.com".into()),
            mail_enabled: true,
        }
    }

    fn mail(kind: MailKind) -> ClaimedMail {
        ClaimedMail { id: 1, tenant: TenantId(1), conversation: ConversationId(7), kind, attempts: 0, revision: 0, leased_until: T0 }
    }

    fn answer(id: i64, at: Timestamp) -> Message {
        Message {
            id: MessageId(id),
            tenant_id: TenantId(1),
            conversation_id: ConversationId(7),
            sender: Sender { kind: SenderKind::Operator, operator_id: Some(OperatorId(1)), name: Some("Ann".into()) },
            body: format!("answer {id}"),
            internal: false,
            created_at: at,
            client_message_id: None,
            read_by_visitor_at: None,
            attachments: Vec::new(),
        }
    }

    fn context(email: Option<&str>, messages: Vec<Message>) -> MailContext {
        let conversation = Conversation {
            id: ConversationId(7),
            public_id: "conv_x".into(),
            tenant_id: TenantId(1),
            site_id: SiteId(1),
            installation_id: InstallationId(1),
            visitor_id: VisitorId(1),
            status: ConversationStatus::Assigned,
            subject: None,
            assignee_id: Some(OperatorId(1)),
            created_at: T0,
            last_message_at: T0,
            closed_at: None,
            verified_at: None,
        };
        let visitor = Visitor {
            id: VisitorId(1),
            tenant_id: TenantId(1),
            site_id: SiteId(1),
            uuid: "v".into(),
            profile: VisitorProfile {
                email: email.map(str::to_owned),
                last_url: Some("https://shop.example.com/cart".into()),
                ..Default::default()
            },
            verified_at: None,
            verified_method: None,
            verified_target: None,
            user_id: None,
            site_email: None,
            attributes: Default::default(),
            created_at: T0,
            updated_at: T0,
        };
        let details = ConversationDetails {
            conversation,
            visitor,
            site: SiteRef { id: SiteId(1), name: "Acme".into() },
            assignee: None,
            unread_count: 0,
            last_message: None,
            waiting_since: None,
        };
        let site = Site {
            id: SiteId(1),
            tenant_id: TenantId(1),
            name: "Acme".into(),
            domains: vec!["shop.example.com".into()],
            appearance: Default::default(),
            created_at: T0,
            settings: Default::default(),
        };
        MailContext { details, site, thread: MailThread::default(), open_until: None, messages }
    }

    fn tokens() -> MailTokens {
        MailTokens::new(&ServerKeys::from_secret([3; 32]))
    }

    #[test]
    fn an_answer_waits_its_delay_and_an_open_widget() {
        let ctx = context(Some("v@example.com"), vec![answer(5, T0)]);
        let (s, t) = (settings(), tokens());
        assert_eq!(plan(&mail(MailKind::Reply), Some(&ctx), &s, &t, T0.plus(Duration::from_secs(60))), MailStep::Later(T0.plus(DELAY)));
        let now = T0.plus(DELAY);
        let open = MailContext { open_until: Some(now.plus(Duration::from_secs(30))), ..ctx.clone() };
        assert_eq!(plan(&mail(MailKind::Reply), Some(&open), &s, &t, now), MailStep::Later(now.plus(Duration::from_secs(30))));
        let MailStep::Send(email, sent) = plan(&mail(MailKind::Reply), Some(&ctx), &s, &t, now) else { panic!("sent") };
        assert_eq!(email.to, "v@example.com");
        assert!(email.text.contains("https://shop.example.com/cart"), "the link back: {}", email.text);
        assert_eq!(sent.emailed_through, Some(MessageId(5)));
        assert!(!sent.more);
        let thread = email.thread.expect("threading");
        assert_eq!(thread.reply_to.as_deref(), Some(t.reply_address(ConversationId(7), "reply.example.com").as_str()));
        assert_eq!(sent.root_id, thread.message_id, "the first email is its thread's root");
    }

    #[test]
    fn the_link_back_goes_only_to_the_sites_own_pages() {
        let (s, t, now) = (settings(), tokens(), T0.plus(DELAY));
        let mut ctx = context(Some("v@example.com"), vec![answer(5, T0)]);
        ctx.details.visitor.profile.last_url = Some("https://evil.example/login".into());
        let MailStep::Send(email, _) = plan(&mail(MailKind::Reply), Some(&ctx), &s, &t, now) else { panic!("sent") };
        assert!(!email.text.contains("evil.example") && !email.html.contains("evil.example"), "{}", email.text);
        ctx.details.visitor.profile.last_url = Some("https://shop.example.com/".into());
        ctx.site.domains.clear();
        let MailStep::Send(email, _) = plan(&mail(MailKind::Reply), Some(&ctx), &s, &t, now) else { panic!("sent") };
        assert!(!email.text.contains("https://shop.example.com/"), "a site open to any domain gets no link");
    }

    #[test]
    fn nothing_goes_without_an_address_a_subscription_or_an_unread_answer() {
        let (s, t, now) = (settings(), tokens(), T0.plus(DELAY));
        let reply = mail(MailKind::Reply);
        assert_eq!(plan(&reply, None, &s, &t, now), MailStep::Drop("conversation gone"));
        assert_eq!(plan(&reply, Some(&context(None, vec![answer(5, T0)])), &s, &t, now), MailStep::Drop("no email address"));
        assert_eq!(plan(&reply, Some(&context(Some("v@example.com"), vec![])), &s, &t, now), MailStep::Drop("read meanwhile"));
        let mut left = context(Some("v@example.com"), vec![answer(5, T0)]);
        left.thread.unsubscribed_at = Some(T0);
        assert_eq!(plan(&reply, Some(&left), &s, &t, now), MailStep::Drop("unsubscribed"));
        assert_eq!(
            plan(&reply, Some(&context(Some("v@example.com"), vec![answer(5, T0)])), &MailSettings { mail_enabled: false, ..s }, &t, now),
            MailStep::Drop("no email channel")
        );
    }

    #[test]
    fn a_transcript_goes_only_to_the_address_proven_when_it_is_sent() {
        let (s, t) = (settings(), tokens());
        let mut ctx = context(Some("victim@example.com"), vec![answer(1, T0)]);
        assert_eq!(plan(&mail(MailKind::Transcript), Some(&ctx), &s, &t, T0), MailStep::Drop("no email address"), "typed, not proven");
        ctx.details.visitor.verified_at = Some(T0);
        ctx.details.visitor.verified_method = Some(crate::verification::Method::EmailOtp);
        ctx.details.visitor.verified_target = Some("me@example.com".into());
        let MailStep::Send(email, _) = plan(&mail(MailKind::Transcript), Some(&ctx), &s, &t, T0) else { panic!("sent") };
        assert_eq!(email.to, "me@example.com", "the proven address, not the one typed since");
    }

    #[test]
    fn a_long_backlog_is_sent_in_parts_and_a_transcript_at_once() {
        let (s, t) = (settings(), tokens());
        let backlog: Vec<_> = (1..=i64::from(REPLY_LIMIT)).map(|id| answer(id, T0)).collect();
        let MailStep::Send(_, sent) = plan(&mail(MailKind::Reply), Some(&context(Some("v@example.com"), backlog)), &s, &t, T0.plus(DELAY))
        else {
            panic!("sent")
        };
        assert!(sent.more, "the rest follows");
        let mut proven = context(Some("v@example.com"), vec![answer(1, T0)]);
        proven.details.visitor.verified_at = Some(T0);
        proven.details.visitor.verified_method = Some(crate::verification::Method::EmailOtp);
        proven.details.visitor.verified_target = Some("v@example.com".into());
        let transcript = plan(&mail(MailKind::Transcript), Some(&proven), &s, &t, T0);
        assert!(matches!(transcript, MailStep::Send(_, SentThread { emailed_through: None, .. })));
    }

    #[test]
    fn failures_are_tried_again_on_the_schedule_then_given_up() {
        let busy = SendError::transient("421");
        assert_eq!(retry_at(1, &busy, T0), Some(T0.plus(RETRY_SCHEDULE[0])));
        assert_eq!(retry_at(7, &busy, T0), Some(T0.plus(RETRY_SCHEDULE[6])));
        assert_eq!(retry_at(8, &busy, T0), None);
        assert_eq!(retry_at(1, &SendError::permanent("550 5.1.1"), T0), None);
    }
}
