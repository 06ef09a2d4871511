//! A DNS resolver for the delivery client that drops every address the
//! target policy forbids, so the client can only connect to addresses that
//! passed the check (no DNS rebinding between check and connect).

use std::net::SocketAddr;

use parley_domain::webhooks::target::forbidden_ip;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

pub(crate) struct CheckedResolver;

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
