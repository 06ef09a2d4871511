//! Verification channels: which the service has, which methods the widget
//! offers, and a test message to an address the admin types.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use parley_domain::verification::channels::{Channel, Provider};

use crate::AppState;
use crate::app::admin_pages::{Admin, Refused, back, done_message, frame, message, notice, problem, refusal, token_field, typed};
use crate::app::error::PageError;
use crate::app::form::CheckedForm;
use crate::app::session::WebSession;
use crate::requests::admin::ChannelTestRequest;

const HERE: &str = "/app/integrations/verification";

pub async fn to_page() -> Response {
    back(HERE)
}

const DONE: [(&str, &str); 1] = [("sent", "The test message is sent: the provider took it. Check that it arrived.")];

pub async fn page(State(s): State<AppState>, Admin(who): Admin, RawQuery(query): RawQuery) -> Result<Response, PageError> {
    render(&s, &who, StatusCode::OK, done_message(query.as_deref(), &DONE), None)
}

fn provider_label(provider: Option<Provider>) -> &'static str {
    match provider {
        Some(Provider::Smtp) => "SMTP server",
        Some(Provider::SmsGateway) => "SMS gateway",
        Some(Provider::SandboxOutbox) => "Sandbox outbox (parley demo: kept in the demo's outbox, never sent)",
        None => "Not configured",
    }
}

fn channel_label(channel: Channel) -> &'static str {
    match channel {
        Channel::Email => "Email",
        Channel::Sms => "SMS",
    }
}

fn render(s: &AppState, who: &WebSession, status: StatusCode, done: Option<&str>, refused: Option<Refused>) -> Result<Response, PageError> {
    let states = s.verification.channel_states(&who.session)?;
    let offered: Vec<&str> = s.verification.methods().iter().map(|m| m.as_str()).collect();
    let (refused, message) = (refused.as_ref(), message(refused.as_ref()));
    let chosen = typed(refused, "channel");
    let main = html! {
        h1 { "Verification" }
        (notice(done))
        p { "Visitors prove their email address or phone number with a code or a link sent through these channels. They are the service's own, set by whoever runs Parley (" code { "PARLEY_SMTP_URL" } ", " code { "PARLEY_SMS_GATEWAY_URL" } ")." }
        table.list {
            thead { tr { th scope="col" { "Channel" } th scope="col" { "Carried by" } th scope="col" { "Methods" } } }
            tbody {
                @for c in &states {
                    tr data-channel=(c.channel.as_str()) {
                        td { (channel_label(c.channel)) }
                        td { (provider_label(c.provider)) }
                        td { (c.methods.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", ")) }
                    }
                }
            }
        }
        p #offered { "The widget offers: "
            @if offered.is_empty() { "no verification (no channel is configured)." } @else { code { (offered.join(", ")) } "." } }
        section aria-labelledby="test-heading" {
            h2 #test-heading { "Send a test message" }
            form.stack method="post" action={ (HERE) "/test" } {
                (token_field(who))
                label for="test-channel" { "Channel" }
                select #test-channel name="channel" {
                    @for c in Channel::ALL { option value=(c.as_str()) selected[chosen == c.as_str()] { (channel_label(c)) } }
                }
                label for="test-to" { "To" }
                input #test-to name="to" required placeholder="you@example.com or +4915123456789" value=(typed(refused, "to"))
                    aria-invalid=[message.map(|_| "true")] aria-describedby={ "test-to-help" @if message.is_some() { " test-problem" } };
                p.help #test-to-help { "An email address for email, a phone number in international form (+ and digits) for SMS. Tests are limited per tenant (10 an hour by default) and per recipient." }
                (problem("test-problem", message))
                button type="submit" { "Send test" }
            }
        }
    };
    Ok(frame(who, "Verification", HERE, status, main))
}

/// Sends the test and answers a redirect, so a reload sends no second
/// message.
pub async fn send_test(State(s): State<AppState>, Admin(who): Admin, CheckedForm(form): CheckedForm) -> Result<Response, PageError> {
    let sent = match form.read::<ChannelTestRequest>() {
        Ok(input) => s.verification.send_test(&who.session, input.channel, input.to).await,
        Err(e) => Err(e),
    };
    match sent {
        Ok(_) => Ok(back(&format!("{HERE}?done=sent"))),
        Err(e) => {
            let (status, message) = refusal(e)?;
            render(&s, &who, status, None, Some(Refused { message, held: form }))
        }
    }
}
