//! Visitors who leave, by email, against a real SMTP server on loopback:
//! the answers they missed, threaded and unsubscribable; their emailed
//! replies, written as real mail clients write them, back in the
//! conversation; transcripts; a mail server that is down; two instances.

use std::time::Duration;

use mail_parser::MessageParser;
use parley_domain::Clock;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::smtp_sink::{Mail, SmtpSink};

const DOMAIN: &str = "reply.parley.test";
const INBOUND: &str = "inbound-secret-0123456789";
const DELAY: Duration = Duration::from_secs(120);

struct Chat {
    app: TestApp,
    smtp: SmtpSink,
    token: String,
    admin: String,
    public_id: String,
    id: i64,
}

fn spawn(smtp: &SmtpSink) -> Spawn {
    TestApp::with()
        .var("PARLEY_METRICS_TOKEN", METRICS_TOKEN)
        .var("PARLEY_SMTP_URL", &smtp.url())
        .var("PARLEY_MAIL_FROM", "Parley <noreply@parley.test>")
        .var("PARLEY_INBOUND_DOMAIN", DOMAIN)
        .var("PARLEY_INBOUND_TOKEN", INBOUND)
        .var("PARLEY_WEBHOOK_POLL_INTERVAL", "20ms")
        .var("PARLEY_PUBLIC_URL", "https://chat.parley.test")
}

/// Proves the visitor's address with an emailed code, as the widget does.
pub async fn verify(app: &TestApp, smtp: &SmtpSink, token: &str, public_id: &str) {
    let path = format!("/api/widget/conversations/{public_id}/verification/start");
    let (status, started) = app.post(&path, json!({"token": token, "method": "email_otp"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    let data = smtp.next().await.data;
    let at = data.find("code is ").expect("a code") + "code is ".len();
    let code: String = data[at..].chars().take(6).collect();
    let path = format!("/api/widget/conversations/{public_id}/verification/confirm");
    let body = json!({"token": token, "challenge_id": started["challenge"]["id"], "code": code});
    let (status, confirmed) = app.post(&path, body).await;
    assert_eq!(status, StatusCode::OK, "{confirmed}");
}

/// A visitor who gave an address, in a conversation an admin answers.
async fn chat() -> Chat {
    let smtp = SmtpSink::start().await;
    let app = spawn(&smtp).start().await;
    let f = app.fixture("acme", &["shop.example.com"]).await;
    let visitor = json!({"token": f.token, "uuid": "renee", "name": "Renée Müller", "email": "renee@example.com",
                         "current_url": "https://shop.example.com/pricing"});
    let (status, body) = app.post("/api/v1/widget/visitors", visitor).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let public_id = app.open_conversation("/api", &f.token, "renee", "Does the pro plan include SSO?").await;
    let admin = app.login("admin@acme.example.com").await;
    let (_, list) = app.authed(Method::GET, "/api/v1/mobile/conversations", &admin, None).await;
    let id = list["conversations"][0]["id"].as_i64().expect("id");
    Chat { app, smtp, token: f.token, admin, public_id, id }
}

impl Chat {
    async fn reply(&self, text: &str) -> i64 {
        let path = format!("/api/v1/mobile/conversations/{}/messages", self.id);
        let (status, body) = self.app.authed(Method::POST, &path, &self.admin, Some(json!({"body": text}))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["message"]["id"].as_i64().expect("id")
    }

    async fn messages(&self) -> Vec<Value> {
        let (_, body) =
            self.app.authed(Method::GET, &format!("/api/v1/mobile/conversations/{}/messages", self.id), &self.admin, None).await;
        body["messages"].as_array().expect("messages").clone()
    }

    async fn inbound(&self, raw: &str) -> (StatusCode, Value) {
        let auth = format!("Bearer {INBOUND}");
        let res = self
            .app
            .client
            .post(self.app.url("/api/inbound/email"))
            .header("authorization", auth)
            .header("content-type", "message/rfc822")
            .body(raw.to_owned())
            .send()
            .await
            .expect("request");
        let status = res.status();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    /// Counted by the worker once it has looked at an email it did not send.
    async fn dropped(&self) -> f64 {
        let text = scrape_metrics(&self.app).await;
        text.lines()
            .filter(|l| l.starts_with("parley_visitor_emails_total{") && l.contains("outcome=\"dropped\""))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }
}

struct Headers {
    message_id: String,
    in_reply_to: Option<String>,
    references: Vec<String>,
    reply_to: String,
    from_name: String,
    list_unsubscribe: String,
    list_unsubscribe_post: String,
    subject: String,
    text: String,
    html: String,
}

/// The email as a mail client reads it, MIME undone.
fn read(mail: &Mail) -> Headers {
    let m = MessageParser::default().parse(mail.data.as_bytes()).expect("an email");
    // As written (a parser reads `List-Unsubscribe` as addresses).
    let text_header = |name: &str| {
        let head = mail.data.split("\r\n\r\n").next().unwrap_or_default().replace("\r\n ", " ").replace("\r\n\t", " ");
        let prefix = format!("{}: ", name.to_ascii_lowercase());
        head.split("\r\n").find(|l| l.to_ascii_lowercase().starts_with(&prefix)).map(|l| l[prefix.len()..].to_owned()).unwrap_or_default()
    };
    let ids = |name: &str| -> Vec<String> {
        m.header_values(name)
            .next()
            .map(|v| match v {
                mail_parser::HeaderValue::Text(t) => vec![t.to_string()],
                mail_parser::HeaderValue::TextList(l) => l.iter().map(|t| t.to_string()).collect(),
                _ => vec![],
            })
            .unwrap_or_default()
    };
    Headers {
        message_id: m.message_id().expect("Message-ID").to_owned(),
        in_reply_to: ids("In-Reply-To").into_iter().next(),
        references: ids("References"),
        reply_to: m.reply_to().and_then(|a| a.first()).and_then(|a| a.address()).unwrap_or_default().to_owned(),
        from_name: m.from().and_then(|a| a.first()).and_then(|a| a.name()).unwrap_or_default().to_owned(),
        list_unsubscribe: text_header("List-Unsubscribe"),
        list_unsubscribe_post: text_header("List-Unsubscribe-Post"),
        subject: m.subject().unwrap_or_default().to_owned(),
        text: m.body_text(0).map(|t| t.into_owned()).unwrap_or_default(),
        html: m.body_html(0).map(|t| t.into_owned()).unwrap_or_default(),
    }
}

#[tokio::test]
async fn a_visitor_who_left_gets_the_answers_by_email_in_one_thread() {
    let c = chat().await;
    c.reply("Yes, SSO comes with the pro plan.").await;
    c.reply("Shall I send you the setup guide?").await;
    c.app.clock.advance(DELAY + Duration::from_secs(1));
    let first = c.smtp.next().await;
    assert_eq!(first.to, ["renee@example.com"]);
    let h = read(&first);
    assert_eq!(h.from_name, "acme site");
    assert_eq!(h.subject, "Your conversation with acme site");
    assert!(
        h.text.contains("Yes, SSO comes with the pro plan.") && h.text.contains("Shall I send you the setup guide?"),
        "one email, both answers: {}",
        h.text
    );
    assert!(h.html.contains("Shall I send you the setup guide?"), "an HTML part too");
    assert!(h.text.contains("https://shop.example.com/pricing"), "a link back to the page");
    assert!(h.reply_to.starts_with("reply+") && h.reply_to.ends_with(&format!("@{DOMAIN}")), "{}", h.reply_to);
    assert!(h.list_unsubscribe.starts_with("<https://chat.parley.test/email/unsubscribe/"), "{}", h.list_unsubscribe);
    assert_eq!(h.list_unsubscribe_post, "List-Unsubscribe=One-Click");
    assert_eq!(h.in_reply_to, None, "the first of its thread");

    // The next answer joins the thread.
    c.reply("Here it is: https://docs.example.com/sso").await;
    c.app.clock.advance(DELAY + Duration::from_secs(1));
    let second = read(&c.smtp.next().await);
    assert!(
        second.text.contains("docs.example.com/sso") && !second.text.contains("pro plan."),
        "only what was not emailed: {}",
        second.text
    );
    assert_eq!(second.in_reply_to.as_deref(), Some(h.message_id.as_str()));
    assert_eq!(second.references, std::slice::from_ref(&h.message_id));
    assert_eq!(second.subject, h.subject, "one subject, one thread");
    assert!(c.smtp.drain().await.is_empty(), "one email per batch");
}

#[tokio::test]
async fn nothing_is_emailed_once_read_or_while_the_widget_is_open() {
    let c = chat().await;
    let answer = c.reply("Read on the page").await;
    let path = format!("/api/v1/widget/conversations/{}/read", c.public_id);
    let (status, _) = c.app.post(&path, json!({"token": c.token, "message_id": answer})).await;
    assert_eq!(status, StatusCode::OK);
    c.app.clock.advance(DELAY + Duration::from_secs(1));
    eventually(|| async { (c.dropped().await >= 1.0).then_some(()) }).await;
    assert!(c.smtp.drain().await.is_empty(), "read in time: no email");

    // A widget stream open holds the email back; once it ends, it goes.
    let stream = crate::sse::open_ok(&c.app, &format!("/api/widget/conversations/{}/events?token={}", c.public_id, c.token), &[]).await;
    // Written within a second of the stream's opening.
    let (tenant, conversation) = (parley_domain::model::TenantId(1), parley_domain::model::ConversationId(c.id));
    eventually(|| async { c.app.db.read(move |r| Ok(r.widget_open_until(tenant, conversation)?)).await.expect("read") }).await;
    c.reply("Seen live, not read").await;
    c.app.clock.advance(DELAY + Duration::from_secs(1));
    // The worker looks, and puts it off until the stream's presence ends.
    eventually(|| async {
        let due = c.app.db.read(|r| Ok(r.next_visitor_mail_due(DELAY)?)).await.expect("read");
        due.filter(|d| *d > c.app.clock.now()).map(|_| ())
    })
    .await;
    assert!(c.smtp.drain().await.is_empty(), "held back while the stream is open");
    drop(stream);
    eventually(|| async {
        let due = c.app.db.read(|r| Ok(r.next_visitor_mail_due(DELAY)?)).await.expect("read");
        due.filter(|d| *d <= c.app.clock.now().plus(parley_domain::continuity::PRESENCE_GRACE)).map(|_| ())
    })
    .await;
    c.app.clock.advance(parley_domain::continuity::PRESENCE_GRACE + Duration::from_secs(1));
    let mail = read(&c.smtp.next().await);
    assert!(mail.text.contains("Seen live, not read"), "{}", mail.text);
}

#[tokio::test]
async fn one_click_unsubscribe_stops_the_emails_of_the_conversation() {
    let c = chat().await;
    c.reply("First answer").await;
    c.app.clock.advance(DELAY + Duration::from_secs(1));
    let h = read(&c.smtp.next().await);
    let url = h.list_unsubscribe.trim_matches(['<', '>']).to_owned();
    let path = url.strip_prefix("https://chat.parley.test").expect("our address").to_owned();

    // Opening the link (a mail scanner does) changes nothing.
    let res = c.app.client.get(c.app.url(&path)).send().await.expect("page");
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.text().await.expect("text").contains("<form method=\"post\""));
    let res = c.app.client.get(c.app.url("/email/unsubscribe/1-00")).send().await.expect("page");
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let forged = format!("{}0", path);
    let res = c.app.client.post(c.app.url(&forged)).body("List-Unsubscribe=One-Click").send().await.expect("post");
    assert_eq!(res.status(), StatusCode::NOT_FOUND, "a token that is not ours");

    // RFC 8058: the mail client's POST.
    let post = || {
        c.app
            .client
            .post(c.app.url(&path))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("List-Unsubscribe=One-Click")
            .send()
    };
    assert_eq!(post().await.expect("post").status(), StatusCode::OK);
    assert_eq!(post().await.expect("again").status(), StatusCode::OK, "repeating it is harmless");
    c.reply("Second answer").await;
    c.app.clock.advance(DELAY + Duration::from_secs(1));
    let due = c.app.db.read(|r| Ok(r.next_visitor_mail_due(DELAY)?)).await.expect("read");
    assert_eq!(due, None, "nothing queued once unsubscribed");
    let (status, body) = c.app.post(&format!("/api/widget/conversations/{}/transcript", c.public_id), json!({"token": c.token})).await;
    assert_error(status, &body, StatusCode::CONFLICT, "conflict");
    assert!(c.smtp.drain().await.is_empty());
}

/// A reply as Gmail writes it: multipart/alternative, quoted-printable,
/// the history quoted under an attribution line, an encoded subject.
fn gmail_reply(to: &str, in_reply_to: &str, from: &str, message_id: &str) -> String {
    format!(
        "From: =?UTF-8?Q?Ren=C3=A9e_M=C3=BCller?= <{from}>\r\n\
         To: acme site <{to}>\r\n\
         Subject: =?UTF-8?Q?Re:_Your_conversation_with_acme_site_=E2=9C=93?=\r\n\
         Message-ID: <{message_id}>\r\n\
         In-Reply-To: <{in_reply_to}>\r\n\
         References: <{in_reply_to}>\r\n\
         MIME-Version: 1.0\r\n\
         Content-Type: multipart/alternative; boundary=\"000000000000b1\"\r\n\r\n\
         --000000000000b1\r\n\
         Content-Type: text/plain; charset=\"UTF-8\"\r\n\
         Content-Transfer-Encoding: quoted-printable\r\n\r\n\
         Merci, =C3=A7a marche tr=C3=A8s bien !\r\n\
         Une question de plus : et le SCIM ?\r\n\r\n\
         On Fri, Nov 27, 2026 at 10:02 AM acme site <\r\n\
         {to}> wrote:\r\n\r\n\
         > Yes, SSO comes with the pro plan.\r\n\
         >\r\n\
         > --\r\n\
         > You get this email because...\r\n\r\n\
         --000000000000b1\r\n\
         Content-Type: text/html; charset=\"UTF-8\"\r\n\
         Content-Transfer-Encoding: quoted-printable\r\n\r\n\
         <div dir=3D\"ltr\">Merci, =C3=A7a marche tr=C3=A8s bien !<br>Une question de plus : et le SCIM ?</div>\
         <div class=3D\"gmail_quote\">On Fri wrote:<blockquote>Yes, SSO comes with the pro plan.</blockquote></div>\r\n\
         --000000000000b1--\r\n"
    )
}

/// A reply as Outlook writes it: plain text, a signature, and its header
/// block over the history.
fn outlook_reply(to: &str, from: &str, message_id: &str) -> String {
    format!(
        "From: Renee <{from}>\r\nTo: <{to}>\r\nSubject: RE: Your conversation with acme site\r\nMessage-ID: <{message_id}>\r\n\
         Content-Type: text/plain; charset=\"us-ascii\"\r\n\r\n\
         Thanks, all set.\r\n\r\n-- \r\nRenee Mueller\r\nHead of IT\r\n\r\n\
         From: acme site <{to}>\r\nSent: Friday, November 27, 2026 10:02 AM\r\nTo: Renee <{from}>\r\n\
         Subject: Your conversation with acme site\r\n\r\nYes, SSO comes with the pro plan.\r\n"
    )
}

#[tokio::test]
async fn an_emailed_reply_lands_in_the_conversation_once_without_its_history() {
    let c = chat().await;
    c.reply("Yes, SSO comes with the pro plan.").await;
    c.app.clock.advance(DELAY + Duration::from_secs(1));
    let sent = read(&c.smtp.next().await);
    let (status, _) = c.app.authed(Method::POST, &format!("/api/v1/mobile/conversations/{}/close", c.id), &c.admin, None).await;
    assert_eq!(status, StatusCode::OK);

    let raw = gmail_reply(&sent.reply_to, &sent.message_id, "Renee@Example.com", "CAF-1@mail.gmail.com");
    let (status, body) = c.inbound(&raw).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["outcome"], "added");
    let messages = c.messages().await;
    let last = messages.last().expect("a message");
    assert_eq!(last["body"], "Merci, ça marche très bien !\nUne question de plus : et le SCIM ?", "only the new text");
    assert_eq!(last["sender"], json!({"type": "visitor", "name": "Renée Müller"}));
    let (_, conversation) = c.app.authed(Method::GET, &format!("/api/v1/mobile/conversations/{}", c.id), &c.admin, None).await;
    assert_ne!(conversation["conversation"]["status"], "closed", "a reply reopens: {conversation}");

    // The same email again (a provider retrying) adds nothing.
    let (status, again) = c.inbound(&raw).await;
    assert_eq!((status, again["outcome"].as_str()), (StatusCode::ACCEPTED, Some("repeated")));
    assert_eq!(again["message_id"], body["message_id"]);
    assert_eq!(c.messages().await.len(), messages.len());

    // Outlook's style, and the next email threads under the reply.
    let (status, body) = c.inbound(&outlook_reply(&sent.reply_to, "renee@example.com", "out-2@outlook.test")).await;
    assert_eq!((status, body["outcome"].as_str()), (StatusCode::ACCEPTED, Some("added")), "{body}");
    assert_eq!(c.messages().await.last().expect("message")["body"], "Thanks, all set.");
    c.reply("Great!").await;
    c.app.clock.advance(DELAY + Duration::from_secs(1));
    let next = read(&c.smtp.next().await);
    assert_eq!(next.in_reply_to.as_deref(), Some("out-2@outlook.test"), "answers the visitor's last email");
    assert_eq!(next.references, [sent.message_id.clone(), "out-2@outlook.test".to_owned()]);
}

#[tokio::test]
async fn replies_that_are_not_the_visitors_are_dropped_and_bad_posts_refused() {
    let c = chat().await;
    c.reply("An answer").await;
    c.app.clock.advance(DELAY + Duration::from_secs(1));
    let sent = read(&c.smtp.next().await);
    let before = c.messages().await.len();

    let stranger = gmail_reply(&sent.reply_to, &sent.message_id, "mallory@example.net", "m-1@example.net");
    let (status, body) = c.inbound(&stranger).await;
    assert_eq!((status, body["outcome"].as_str()), (StatusCode::ACCEPTED, Some("dropped")), "another sender");
    let unknown = gmail_reply(&format!("reply+{}-{}@{DOMAIN}", c.id, "0".repeat(32)), "x@y", "renee@example.com", "m-2@example.com");
    let (status, body) = c.inbound(&unknown).await;
    assert_eq!((status, body["outcome"].as_str()), (StatusCode::ACCEPTED, Some("dropped")), "a forged token");
    let elsewhere = gmail_reply("support@acme.example", "x@y", "renee@example.com", "m-3@example.com");
    assert_eq!(c.inbound(&elsewhere).await.1["outcome"], "dropped", "no reply address");
    let away = gmail_reply(&sent.reply_to, &sent.message_id, "renee@example.com", "ooo-1@example.com")
        .replace("MIME-Version: 1.0\r\n", "MIME-Version: 1.0\r\nAuto-Submitted: auto-replied\r\n");
    assert_eq!(c.inbound(&away).await.1["outcome"], "dropped", "an out-of-office answer");
    assert_eq!(c.messages().await.len(), before, "nothing added");

    let no_id = gmail_reply(&sent.reply_to, "x@y", "renee@example.com", "m-4@example.com").replace("Message-ID: <m-4@example.com>\r\n", "");
    let (status, body) = c.inbound(&no_id).await;
    assert_fields(status, &body, &["message"]);
    let only_quoted = format!(
        "From: renee@example.com\r\nTo: {}\r\nMessage-ID: <q@example.com>\r\nContent-Type: text/plain\r\n\r\n> An answer\r\n",
        sent.reply_to
    );
    let (status, body) = c.inbound(&only_quoted).await;
    assert_fields(status, &body, &["message"]);
    let (status, body) = c.inbound("").await;
    assert_fields(status, &body, &["message"]);

    let url = c.app.url("/api/v1/inbound/email");
    let raw = gmail_reply(&sent.reply_to, "x@y", "renee@example.com", "m-5@example.com");
    let post = |auth: Option<&str>, content_type: &str| {
        let mut req = c.app.client.post(&url).header("content-type", content_type).body(raw.clone());
        if let Some(auth) = auth {
            req = req.header("authorization", auth);
        }
        req.send()
    };
    let bearer = format!("Bearer {INBOUND}");
    assert_eq!(post(None, "message/rfc822").await.unwrap().status(), StatusCode::UNAUTHORIZED);
    assert_eq!(post(Some("Bearer wrong-token-0123456789"), "message/rfc822").await.unwrap().status(), StatusCode::UNAUTHORIZED);
    let res = post(Some(&bearer), "text/plain").await.unwrap();
    assert_eq!(res.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let big = "x".repeat(11 * 1024 * 1024);
    let res = c.app.client.post(&url).header("authorization", &bearer).header("content-type", "message/rfc822").body(big).send().await;
    assert_eq!(res.expect("answer").status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(c.messages().await.len(), before, "still nothing added");
}

#[tokio::test]
async fn without_an_inbound_token_the_route_is_not_there() {
    let app = TestApp::spawn().await;
    let res = app
        .client
        .post(app.url("/api/inbound/email"))
        .header("authorization", "Bearer anything-at-all-123")
        .header("content-type", "message/rfc822")
        .body("From: a@b\r\n\r\nhi")
        .send()
        .await
        .expect("answer");
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_mail_server_that_is_down_delays_the_email_and_the_transcript_comes_whole() {
    let c = chat().await;
    c.smtp.unavailable();
    c.reply("Sent while the mail server is down").await;
    c.app.clock.advance(DELAY + Duration::from_secs(1));
    eventually(|| async {
        let text = scrape_metrics(&c.app).await;
        text.lines().any(|l| l.starts_with("parley_visitor_emails_total{") && l.contains("outcome=\"retry\"")).then_some(())
    })
    .await;
    c.smtp.accept();
    c.app.clock.advance(Duration::from_secs(61));
    let mail = read(&c.smtp.next().await);
    assert!(mail.text.contains("Sent while the mail server is down"));

    // A transcript goes only to an address the visitor proved.
    let path = format!("/api/widget/conversations/{}/transcript", c.public_id);
    let (status, body) = c.app.post(&path, json!({"token": c.token})).await;
    assert_fields(status, &body, &["email"]);
    verify(&c.app, &c.smtp, &c.token, &c.public_id).await;

    let (status, body) = c.app.post(&path, json!({"token": c.token})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let transcript = read(&c.smtp.next().await);
    assert_eq!(transcript.subject, "Transcript of your conversation with acme site");
    assert!(transcript.text.contains("Does the pro plan include SSO?") && transcript.text.contains("Sent while the mail server is down"));
    assert_eq!(transcript.in_reply_to.as_deref(), Some(mail.message_id.as_str()), "in the conversation's thread");
}

#[tokio::test]
async fn a_recipient_refused_for_good_is_given_up() {
    let c = chat().await;
    c.smtp.refuse_recipients();
    c.reply("Nobody will read this").await;
    c.app.clock.advance(DELAY + Duration::from_secs(1));
    eventually(|| async {
        let text = scrape_metrics(&c.app).await;
        text.lines().any(|l| l.starts_with("parley_visitor_emails_total{") && l.contains("outcome=\"failed\"")).then_some(())
    })
    .await;
    let due = c.app.db.read(|r| Ok(r.next_visitor_mail_due(DELAY)?)).await.expect("read");
    assert_eq!(due, None, "not tried again");
}

/// Two instances on one database, both polling: every email goes once.
#[tokio::test]
async fn two_instances_send_each_email_once() {
    if backend() != "postgres" {
        return;
    }
    let c = chat().await;
    let b = spawn(&c.smtp).var("PARLEY_DATABASE_URL", &c.app.database_url).start().await;
    let f2 = c.app.fixture("globex", &[]).await;
    let mut conversations = Vec::new();
    for n in 0..8 {
        let uuid = format!("v{n}");
        let visitor = json!({"token": f2.token, "uuid": uuid, "email": format!("v{n}@example.com")});
        assert_eq!(c.app.post("/api/widget/visitors", visitor).await.0, StatusCode::CREATED);
        conversations.push(c.app.open_conversation("/api", &f2.token, &uuid, "hello").await);
    }
    let admin = b.login("admin@globex.example.com").await;
    let (_, list) = b.authed(Method::GET, "/api/v1/mobile/conversations", &admin, None).await;
    for conversation in list["conversations"].as_array().expect("list") {
        let id = conversation["id"].as_i64().expect("id");
        let path = format!("/api/v1/mobile/conversations/{id}/messages");
        assert_eq!(b.authed(Method::POST, &path, &admin, Some(json!({"body": "an answer"}))).await.0, StatusCode::OK);
    }
    for clock in [&c.app.clock, &b.clock] {
        clock.advance(DELAY + Duration::from_secs(1));
    }
    let mut to = Vec::new();
    for _ in 0..8 {
        to.extend(c.smtp.next().await.to);
    }
    eventually(|| async { c.app.db.read(|r| Ok(r.next_visitor_mail_due(DELAY)?)).await.expect("read").is_none().then_some(()) }).await;
    to.extend(c.smtp.drain().await.into_iter().flat_map(|m| m.to));
    to.sort();
    let expected: Vec<String> = (0..8).map(|n| format!("v{n}@example.com")).collect();
    assert_eq!(to, expected, "each visitor once");
}
