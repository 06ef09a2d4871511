//! Who is calling: the client address (through trusted proxies only) and
//! the browser origin.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRef, FromRequestParts};
use axum::http::header;
use axum::http::request::Parts;
use ipnet::IpNet;
use parley_domain::model::InstallationId;
use parley_domain::widget::{Caller, Origin};

use crate::error::ApiError;

/// Proxies whose `X-Forwarded-For` is believed (`PARLEY_TRUSTED_PROXIES`).
#[derive(Clone, Debug, Default)]
pub struct TrustedProxies(Arc<Vec<IpNet>>);

impl TrustedProxies {
    pub fn new(nets: Vec<IpNet>) -> Self {
        Self(Arc::new(nets))
    }

    /// A dual-stack listener sees IPv4 peers as `::ffff:a.b.c.d`: they are
    /// compared as the IPv4 addresses they are.
    fn trusts(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|n| n.contains(&ip))
    }

    /// The client address: the socket peer, or, when the peer is a trusted
    /// proxy, the right-most `X-Forwarded-For` entry that is not one.
    ///
    /// `forwarded_for` holds every `X-Forwarded-For` line in order: a
    /// proxy may append its own line instead of extending the first one
    /// (HAProxy's `option forwardfor`), and reading only the first would
    /// believe whatever the client wrote there.
    pub fn client_ip<'a>(&self, peer: IpAddr, forwarded_for: impl IntoIterator<Item = &'a str>) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        // Empty entries (a trailing comma) are no hop.
        let hops: Vec<&str> = forwarded_for.into_iter().flat_map(|line| line.split(',')).filter(|h| !h.trim().is_empty()).collect();
        let mut client = peer;
        for hop in hops.iter().rev() {
            match parse_hop(hop) {
                Some(ip) => {
                    client = ip;
                    if !self.trusts(ip) {
                        break;
                    }
                }
                None => break,
            }
        }
        client
    }
}

/// One `X-Forwarded-For` entry: an address, possibly with a port
/// (`192.0.2.1:5678`, `[2001:db8::1]:443`) or in brackets.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(addr) = hop.parse::<SocketAddr>() {
        return Some(addr.ip());
    }
    hop.strip_prefix('[').and_then(|h| h.strip_suffix(']')).and_then(|h| h.parse().ok())
}

/// The scheme, host and port of `PARLEY_PUBLIC_URL`: Parley's own pages
/// are there. Every request carries it (an extension the router adds).
#[derive(Clone, Debug)]
pub struct OwnOrigin(pub Arc<str>);

/// Where the web app's *try it* page of an installation lives; the
/// widget's requests from it name it in their `Referer`.
pub fn try_page_path(installation: i64) -> String {
    format!("/app/integrations/installations/{installation}/try")
}

/// The installation whose *try it* page sent the request: the browser's
/// `Origin` is Parley's own and its `Referer` (sent whole to the same
/// origin, see the pages' `Referrer-Policy`) is that page. A page of
/// another origin cannot claim either, so only that page passes the
/// installation's domain lock this way.
fn try_page(headers: &axum::http::HeaderMap, own: Option<&OwnOrigin>) -> Option<InstallationId> {
    let own = own.filter(|o| !o.0.is_empty())?;
    let origin = headers.get(header::ORIGIN)?.to_str().ok()?;
    if origin != &*own.0 {
        return None;
    }
    let referer = url::Url::parse(headers.get(header::REFERER)?.to_str().ok()?).ok()?;
    if referer.origin().ascii_serialization() != *own.0 || referer.query().is_some() {
        return None;
    }
    let id = referer.path().strip_prefix("/app/integrations/installations/")?.strip_suffix("/try")?;
    let id: i64 = id.parse().ok().filter(|n| *n > 0)?;
    (referer.path() == try_page_path(id)).then_some(InstallationId(id))
}

/// The address a request came from: its peer's, or what the trusted
/// proxies in front say of it.
pub fn client_ip(parts: &Parts, proxies: &TrustedProxies) -> IpAddr {
    let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().map_or(IpAddr::from([127, 0, 0, 1]), |c| c.0.ip());
    let forwarded = parts.headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok());
    proxies.client_ip(peer, forwarded)
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
        let ip = client_ip(parts, &TrustedProxies::from_ref(state));
        let origin = match parts.headers.get(header::ORIGIN) {
            None => Origin::Absent,
            Some(v) => v
                .to_str()
                .ok()
                .and_then(|s| url::Url::parse(s).ok())
                .and_then(|u| u.host_str().map(|h| h.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase()))
                .map_or(Origin::Opaque, Origin::Host),
        };
        let try_page = try_page(&parts.headers, parts.extensions.get::<OwnOrigin>());
        Ok(Self(Caller { ip, origin, try_page }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_try_page_of_parleys_own_origin_is_one() {
        let own = OwnOrigin("https://chat.example.com".into());
        let with = |origin: &str, referer: &str| {
            let mut h = axum::http::HeaderMap::new();
            h.insert(header::ORIGIN, origin.parse().unwrap());
            h.insert(header::REFERER, referer.parse().unwrap());
            try_page(&h, Some(&own))
        };
        let page = "https://chat.example.com/app/integrations/installations/7/try";
        assert_eq!(with("https://chat.example.com", page), Some(InstallationId(7)));
        assert_eq!(with("https://evil.example", page), None, "another origin");
        assert_eq!(with("https://chat.example.com", "https://chat.example.com/app"), None, "another page");
        assert_eq!(with("https://chat.example.com", "https://evil.example/app/integrations/installations/7/try"), None);
        assert_eq!(with("https://chat.example.com", &format!("{page}?x=1")), None);
        assert_eq!(with("https://chat.example.com", "https://chat.example.com/app/integrations/installations/07/try"), None);
        assert_eq!(with("https://chat.example.com", "https://chat.example.com/app/integrations/installations/-1/try"), None);
        assert_eq!(with("https://chat.example.com", "https://chat.example.com/app/integrations/installations/7/try/x"), None);
        assert_eq!(with("null", page), None);
        assert_eq!(try_page(&axum::http::HeaderMap::new(), Some(&own)), None);
        let mut h = axum::http::HeaderMap::new();
        h.insert(header::ORIGIN, "https://chat.example.com".parse().unwrap());
        h.insert(header::REFERER, page.parse().unwrap());
        assert_eq!(try_page(&h, None), None, "without a known own origin, nothing is one");
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let proxies = TrustedProxies::new(vec!["10.0.0.0/8".parse().unwrap()]);
        let peer: IpAddr = "10.0.0.2".parse().unwrap();
        let outsider: IpAddr = "203.0.113.9".parse().unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(proxies.client_ip(peer, ["198.51.100.7, 10.0.0.5"]), ip("198.51.100.7"));
        assert_eq!(proxies.client_ip(outsider, ["198.51.100.7"]), outsider);
        assert_eq!(proxies.client_ip(peer, []), peer);
        assert_eq!(proxies.client_ip(peer, ["garbage"]), peer);
    }

    #[test]
    fn every_forwarded_for_line_counts_and_entries_may_carry_ports() {
        let proxies = TrustedProxies::new(vec!["10.0.0.0/8".parse().unwrap()]);
        let peer: IpAddr = "10.0.0.2".parse().unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // The client forged the first line; the proxy appended the second.
        assert_eq!(proxies.client_ip(peer, ["6.6.6.6", "203.0.113.9"]), ip("203.0.113.9"));
        assert_eq!(proxies.client_ip(peer, ["6.6.6.6, 203.0.113.9", "10.0.0.7"]), ip("203.0.113.9"));
        assert_eq!(proxies.client_ip(peer, ["203.0.113.9:5678"]), ip("203.0.113.9"));
        assert_eq!(proxies.client_ip(peer, ["203.0.113.9, "]), ip("203.0.113.9"), "a trailing comma is no hop");
        assert_eq!(proxies.client_ip(peer, ["[2001:db8::1]:443"]), ip("2001:db8::1"));
        assert_eq!(proxies.client_ip(peer, ["[2001:db8::2]"]), ip("2001:db8::2"));
        assert_eq!(proxies.client_ip(peer, ["2001:db8::3"]), ip("2001:db8::3"));
        let mapped: IpAddr = "::ffff:10.0.0.2".parse().unwrap();
        assert_eq!(proxies.client_ip(mapped, ["203.0.113.9"]), ip("203.0.113.9"), "a mapped IPv4 proxy is trusted");
    }
}
