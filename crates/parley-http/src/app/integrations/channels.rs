//! Verification channels: which the service has, which methods the widget
//! offers, and a test message to an address the admin types.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use parley_domain::verification::setup::TestSent;

use super::common::{Admin, back, frame, notice, problem, read, refusal, token_field};
use crate::AppState;
use crate::app::error::PageError;
use crate::app::form::CheckedForm;
use crate::app::layout::when;
use crate::app::session::WebSession;
use crate::requests::admin::ChannelTest;

const HERE: &str = "/app/integrations/verification";

pub async fn to_page() -> Response {
    back(HERE)
}

pub async fn page(State(s): State<AppState>, Admin(who): Admin) -> Result<Response, PageError> {
    render(&s, &who, StatusCode::OK, None, None)
}

fn provider_label(provider: Option<&str>) -> &'static str {
    match provider {
        Some("smtp") => "SMTP server",
        Some("sms_gateway") => "SMS gateway",
        Some("sandbox_outbox") => "Sandbox outbox (parley demo: kept on the /sandbox page, never sent)",
        Some(_) => "Configured",
        None => "Not configured",
    }
}

fn render(
    s: &AppState,
    who: &WebSession,
    status: StatusCode,
    sent: Option<&TestSent>,
    refused: Option<String>,
) -> Result<Response, PageError> {
    let states = s.verification.channel_states(&who.session)?;
    let offered: Vec<&str> = s.verification.methods().iter().map(|m| m.as_str()).collect();
    let done = sent.map(|t| {
        format!(
            "A test {} went to {} through the {}.",
            if t.channel.as_str() == "sms" { "SMS" } else { "email" },
            t.to,
            provider_label(Some(t.provider)).to_lowercase()
        )
    });
    let main = html! {
        h1 { "Verification" }
        (notice(done.as_deref()))
        @if let Some(t) = sent { p.help { "Sent " (when(t.sent_at)) "." } }
        p { "Visitors prove their email address or phone number with a code or a link sent through these channels. They are the service's own, set by whoever runs Parley (" code { "PARLEY_SMTP_URL" } ", " code { "PARLEY_SMS_GATEWAY_URL" } ")." }
        table.list {
            thead { tr { th scope="col" { "Channel" } th scope="col" { "Carried by" } th scope="col" { "Methods" } } }
            tbody {
                @for c in &states {
                    tr data-channel=(c.channel.as_str()) {
                        td { @if c.channel.as_str() == "sms" { "SMS" } @else { "Email" } }
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
                    option value="email" { "Email" }
                    option value="sms" { "SMS" }
                }
                label for="test-to" { "To" }
                input #test-to name="to" required placeholder="you@example.com or +4915123456789" aria-describedby="test-to-help";
                p.help #test-to-help { "An email address for email, a phone number in international form (+ and digits) for SMS. At most 10 tests an hour per tenant." }
                (problem(refused.as_deref()))
                button type="submit" { "Send test" }
            }
        }
    };
    Ok(frame(who, "Verification", HERE, status, main))
}

pub async fn send_test(State(s): State<AppState>, Admin(who): Admin, CheckedForm(form): CheckedForm) -> Result<Response, PageError> {
    let sent = match read::<ChannelTest>(&form, &[], &[]) {
        Ok(input) => s.verification.send_test(&who.session, input.channel, input.to).await,
        Err(e) => Err(e),
    };
    match sent {
        Ok(t) => render(&s, &who, StatusCode::OK, Some(&t), None),
        Err(e) => {
            let (status, message) = refusal(e)?;
            render(&s, &who, status, None, Some(message))
        }
    }
}
