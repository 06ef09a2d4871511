//! What every outbound HTTP client of the workers shares (webhook
//! deliveries, push providers): the client's settings, the address rules
//! for addresses a tenant or a browser chose, and how much of an answer
//! is read.

use std::net::SocketAddr;
use std::time::Duration;

use parley_domain::webhooks::target::forbidden_ip;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// A client that follows no redirect, ignores proxy settings, times out
/// after `timeout`, and trusts the system's roots plus `extra_roots`
/// (`PARLEY_EXTRA_CA_FILE`). `guarded`: the addresses are someone else's
/// choice (a webhook's URL, a browser's push endpoint), so it connects only
/// to those the address rules allow.
pub(crate) fn client(timeout: Duration, extra_roots: &[reqwest::Certificate], user_agent: &str, guarded: bool) -> reqwest::ClientBuilder {
    // Several crates could install a TLS provider; the first one wins.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .connect_timeout(timeout)
        .no_proxy()
        .tls_certs_merge(extra_roots.iter().cloned())
        .user_agent(user_agent);
    if guarded { builder.dns_resolver(CheckedResolver) } else { builder }
}

/// Whether `url` names an address literal the rules forbid: the resolver
/// sees host names only.
pub(crate) fn ip_literal_forbidden(url: &str) -> bool {
    match url::Url::parse(url).ok().and_then(|u| u.host().map(|h| h.to_owned())) {
        Some(url::Host::Ipv4(ip)) => forbidden_ip(ip.into()),
        Some(url::Host::Ipv6(ip)) => forbidden_ip(ip.into()),
        Some(url::Host::Domain(_)) => false,
        None => true,
    }
}

/// Reads at most `limit` bytes of an answer's body: enough for an error
/// message, and so the connection can be reused.
pub(crate) async fn read_body(res: &mut reqwest::Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < limit {
        match res.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(limit);
    body
}

/// A DNS resolver that drops every address the target policy forbids, so
/// the client can only connect to addresses that passed the check (no DNS
/// rebinding between check and connect).
struct CheckedResolver;

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let allowed: Vec<SocketAddr> = found.filter(|a| !forbidden_ip(a.ip())).collect();
            if allowed.is_empty() {
                return Err(format!("{host} resolves to no address deliveries may go to").into());
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}
