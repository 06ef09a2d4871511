//! A visitor's poll that is already up to date is answered from memory:
//! this instance's writes are in the very next poll (this harness runs no
//! feed follower, so only the count taken at commit can tell), and what
//! another instance changed, unheard of, shows once the remembered
//! answer's lifetime is over.

use parley_domain::feed::polls::LIFETIME;
use parley_domain::model::{Content, ConversationScope, MessageId, SiteScope};
use parley_domain::widget::{OpenConversationInput, PostMessageInput};

use crate::harness::{Services, TenantFixture};

async fn open(h: &Services, fixture: &TenantFixture) -> String {
    let input = OpenConversationInput {
        token: fixture.installation.token.clone(),
        visitor_uuid: "4b1d2c3e-5f60-4718-9a2b-3c4d5e6f7081".into(),
        message: "Where is my parcel?".into(),
        subject: Some("Parcel".into()),
        current_url: None,
        client_message_id: None,
        identity: Default::default(),
    };
    h.widget.open_conversation(&h.caller(), input).await.expect("the visitor opens a conversation").0.public_id
}

#[tokio::test]
async fn a_remembered_answer_gives_way_to_a_commit_at_once_and_to_anything_else_after_its_lifetime() {
    let h = Services::new().await;
    let acme = h.tenant("acme").await;
    let token = acme.installation.token.clone();
    let public_id = open(&h, &acme).await;
    let caller = h.caller();
    let poll = |after: Option<MessageId>| h.widget.messages(&caller, &token, public_id.clone(), after);
    let (_, first, cursor) = poll(None).await.expect("the messages");
    let latest = first.last().expect("the first message").id;
    let (conversation, none, again) = poll(Some(latest)).await.expect("an empty poll");
    assert!(none.is_empty());
    assert_eq!((again, conversation.subject.as_deref()), (cursor, Some("Parcel")));

    // The visitor writes again: the next poll has it, with no follower
    // to tell anyone.
    let input = PostMessageInput {
        token: token.clone(),
        public_id: public_id.clone(),
        content: Content::text("It said Tuesday".into()),
        current_url: None,
        client_message_id: None,
    };
    let (posted, _) = h.widget.post_message(&h.caller(), input).await.expect("the visitor writes");
    let (_, new, _) = poll(Some(latest)).await.expect("a poll");
    assert_eq!(new.iter().map(|m| m.id).collect::<Vec<_>>(), [posted.id]);
    let (_, none, _) = poll(Some(posted.id)).await.expect("an empty poll");
    assert!(none.is_empty());

    // Another instance (a second handle on the database) changes the
    // conversation. This harness runs no feed follower, so this instance
    // never counts it: the remembered answer is given until its lifetime
    // ends, and then the database's.
    let scope: ConversationScope = SiteScope { tenant: acme.tenant.id, site: acme.site.id }.into();
    let options = parley_storage::Options { pool: 1, ..Default::default() };
    let other = parley_storage::open(&h.database_url, options).await.expect("a second handle");
    let verify = |db: &parley_domain::Database, verified: bool| {
        let id = public_id.clone();
        let db = db.clone();
        async move {
            db.write(move |tx| {
                let mut c = tx.conversation_by_public_id(scope, &id)?.expect("the conversation");
                c.verified_at = verified.then_some(c.created_at);
                Ok(tx.update_conversation(scope, &c)?)
            })
            .await
            .expect("the change")
        }
    };
    verify(&other, true).await;
    let (remembered, _, _) = poll(Some(posted.id)).await.expect("an empty poll");
    assert_eq!(remembered.verified_at, None, "answered from memory");
    h.clock.advance(LIFETIME);
    let (read, _, _) = poll(Some(posted.id)).await.expect("an empty poll");
    assert!(read.verified_at.is_some(), "read again once its lifetime is over");
    // The same change through this instance is counted at its commit.
    verify(&h.db, false).await;
    let (read, _, _) = poll(Some(posted.id)).await.expect("an empty poll");
    assert_eq!(read.verified_at, None, "this instance's own write, at once");
    other.close().await;
}
