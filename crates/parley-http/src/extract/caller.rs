//! Who is calling: the client address (through trusted proxies only) and
//! the browser origin.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRef, FromRequestParts};
use axum::http::header;
use axum::http::request::Parts;
use ipnet::IpNet;
use parley_domain::widget::{Caller, Origin};

use crate::error::ApiError;

/// Proxies whose `X-Forwarded-For` is believed (`PARLEY_TRUSTED_PROXIES`).
#[derive(Clone, Debug, Default)]
pub struct TrustedProxies(Arc<Vec<IpNet>>);

impl TrustedProxies {
    pub fn new(nets: Vec<IpNet>) -> Self {
        Self(Arc::new(nets))
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|n| n.contains(&ip))
    }

    /// The client address: the socket peer, or, when the peer is a trusted
    /// proxy, the right-most `X-Forwarded-For` entry that is not one.
    pub fn client_ip(&self, peer: IpAddr, forwarded_for: Option<&str>) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let Some(chain) = forwarded_for else {
            return peer;
        };
        let mut client = peer;
        for hop in chain.rsplit(',') {
            match hop.trim().parse::<IpAddr>() {
                Ok(ip) => {
                    client = ip;
                    if !self.trusts(ip) {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        client
    }
}

/// The domain's [`Caller`], read from the request.
pub struct ClientCaller(pub Caller);

impl<S> FromRequestParts<S> for ClientCaller
where
    S: Send + Sync,
    TrustedProxies: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().map_or(IpAddr::from([127, 0, 0, 1]), |c| c.0.ip());
        let forwarded = parts.headers.get("x-forwarded-for").and_then(|v| v.to_str().ok());
        let ip = TrustedProxies::from_ref(state).client_ip(peer, forwarded);
        let origin = match parts.headers.get(header::ORIGIN) {
            None => Origin::Absent,
            Some(v) => v
                .to_str()
                .ok()
                .and_then(|s| url::Url::parse(s).ok())
                .and_then(|u| u.host_str().map(|h| h.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase()))
                .map_or(Origin::Opaque, Origin::Host),
        };
        Ok(Self(Caller { ip, origin }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let proxies = TrustedProxies::new(vec!["10.0.0.0/8".parse().unwrap()]);
        let peer: IpAddr = "10.0.0.2".parse().unwrap();
        let outsider: IpAddr = "203.0.113.9".parse().unwrap();
        assert_eq!(proxies.client_ip(peer, Some("198.51.100.7, 10.0.0.5")), "198.51.100.7".parse::<IpAddr>().unwrap());
        assert_eq!(proxies.client_ip(outsider, Some("198.51.100.7")), outsider);
        assert_eq!(proxies.client_ip(peer, None), peer);
        assert_eq!(proxies.client_ip(peer, Some("garbage")), peer);
    }
}
