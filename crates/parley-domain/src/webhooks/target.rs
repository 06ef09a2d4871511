//! Which endpoint URLs webhooks may go to.
//!
//! An endpoint must be http(s), and unless private targets are allowed
//! (`PARLEY_WEBHOOK_ALLOW_PRIVATE`, on in the demo and tests) its host must
//! not be, or resolve to, an address inside this network: loopback,
//! private, link-local (cloud metadata included), CGNAT, multicast,
//! unspecified, reserved or documentation ranges, in IPv4 or IPv6 form
//! (every IPv6 form that carries an IPv4 address is judged by that
//! address). The
//! check runs at registration and again at connection time, where the
//! client connects only to the addresses that passed it, so a DNS answer
//! that changes in between cannot redirect a delivery inside.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::Url;

use crate::validate::MAX_URL_CHARS;

/// Names that always mean "this machine or its provider".
fn forbidden_name(host: &str) -> bool {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    h == "localhost" || h.ends_with(".localhost") || h == "metadata.google.internal" || h.ends_with(".internal")
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0                                   // "this network"
        || (a == 100 && (64..=127).contains(&b))    // CGNAT 100.64/10
        || (a == 192 && b == 0 && c == 0)           // IETF protocol assignments
        || (a == 198 && (18..=19).contains(&b))     // benchmarking
        || a >= 240 // reserved
}

fn forbidden_v6(ip: Ipv6Addr) -> bool {
    match embedded_v4(ip) {
        Embedded::One(v4) => return forbidden_v4(v4),
        Embedded::Two(a, b) => return forbidden_v4(a) || forbidden_v4(b),
        Embedded::None => {}
    }
    let first = ip.segments()[0];
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00   // unique local fc00::/7
        || (first & 0xffc0) == 0xfe80   // link-local fe80::/10
        || (first & 0xffc0) == 0xfec0   // site-local fec0::/10
        || (first == 0x2001 && ip.segments()[1] == 0x0db8) // documentation
        || (first & 0xfff0) == 0x3ff0 // documentation 3fff::/20 (RFC 9637)
        || (first == 0x0100 && ip.segments()[1..4] == [0, 0, 0]) // discard-only 100::/64 (RFC 6666)
        || (first == 0x2001 && (ip.segments()[1] & 0xfe00) == 0 && ip.segments()[1] != 0) // IETF protocol assignments 2001::/23, Teredo aside
        || (first == 0x64 && ip.segments()[1] == 0xff9b && ip.segments()[2] == 1) // local-use NAT64: where the IPv4 sits varies
}

/// The IPv4 addresses an IPv6 address carries, for the forms that reach
/// them: a packet to such an address ends at the IPv4 host.
enum Embedded {
    None,
    One(Ipv4Addr),
    /// Teredo names two: its server and (obfuscated) its client.
    Two(Ipv4Addr, Ipv4Addr),
}

/// The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`), translated
/// (`::ffff:0:a.b.c.d`, RFC 2765), compatible (`::a.b.c.d`), NAT64
/// (`64:ff9b::a.b.c.d`, RFC 6052), 6to4 (`2002:AABB:CCDD::/48`, RFC 3056),
/// Teredo (`2001:0::/32`, RFC 4380) or ISATAP (an interface identifier
/// `0:5efe:a.b.c.d` or `200:5efe:a.b.c.d` under any prefix, RFC 5214)
/// address.
fn embedded_v4(ip: Ipv6Addr) -> Embedded {
    let s = ip.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    let tail = v4(s[6], s[7]);
    if let Some(mapped) = ip.to_ipv4_mapped() {
        return Embedded::One(mapped);
    }
    if s[..6] == [0, 0, 0, 0, 0xffff, 0] {
        return Embedded::One(tail);
    }
    if s[..6] == [0, 0, 0, 0, 0, 0] && !ip.is_loopback() && !ip.is_unspecified() {
        return Embedded::One(tail);
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return Embedded::One(tail);
    }
    if s[0] == 0x2002 {
        return Embedded::One(v4(s[1], s[2]));
    }
    if s[0] == 0x2001 && s[1] == 0 {
        return Embedded::Two(v4(s[2], s[3]), v4(!s[6], !s[7]));
    }
    if (s[4] & 0xfdff) == 0 && s[5] == 0x5efe {
        return Embedded::One(tail);
    }
    Embedded::None
}

/// Whether deliveries may go to this address when private targets are not allowed.
pub fn forbidden_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

/// Checks an endpoint URL: its form always, its host unless `allow_private`.
/// Host names are resolved; every address they resolve to must pass.
pub async fn check_url(raw: &str, allow_private: bool) -> Result<Url, String> {
    if raw.chars().count() > MAX_URL_CHARS {
        return Err(format!("must be at most {MAX_URL_CHARS} characters"));
    }
    let url = Url::parse(raw).map_err(|_| "must be an absolute http or https URL".to_owned())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("must be an http or https URL".into());
    }
    let host = match url.host() {
        Some(h) => h,
        None => return Err("must have a host".into()),
    };
    if allow_private {
        return Ok(url);
    }
    const REFUSED: &str = "must not point to a loopback, private, link-local or metadata address";
    let addresses = match host {
        url::Host::Ipv4(ip) => vec![IpAddr::V4(ip)],
        url::Host::Ipv6(ip) => vec![IpAddr::V6(ip)],
        url::Host::Domain(name) => {
            if forbidden_name(name) {
                return Err(REFUSED.into());
            }
            let port = url.port_or_known_default().unwrap_or(443);
            let found = tokio::net::lookup_host((name, port)).await.map_err(|_| format!("host {name} cannot be resolved"))?;
            found.map(|a| a.ip()).collect()
        }
    };
    if addresses.is_empty() || addresses.iter().any(|ip| forbidden_ip(*ip)) {
        return Err(REFUSED.into());
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_addresses() {
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.254",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::a9fe:a9fe",
            "2002:a9fe:a9fe::1",
            "2002:7f00:1::",
            "::ffff:0:a9fe:a9fe",
            "::ffff:0:127.0.0.1",
            "::ffff:0:10.1.2.3",
            "::a9fe:a9fe",
            "64:ff9b::127.0.0.1",
            "64:ff9b::10.0.0.1",
            "2002:c0a8:0101::1",
            // Teredo: a private server, or a client of 169.254.169.254
            // (stored inverted: 0x5601:0x5601).
            "2001:0:a00:1::1",
            "2001:0:4136:e378:8000:63bf:5601:5601",
            "2001:0:4136:e378:8000:63bf:80ff:fffe",
            // ISATAP, with the metadata address and a private one.
            "2001:470::5efe:a9fe:a9fe",
            "2001:470::200:5efe:a00:1",
            "3fff::1",
            "100::1",
            "2001:10::1",
            "2001:20::1",
        ] {
            assert!(forbidden_ip(bad.parse().unwrap()), "{bad} must be refused");
        }
        for good in [
            "93.184.216.34",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "2002:808:808::1",
            "::ffff:0:8.8.8.8",
            "64:ff9b::8.8.8.8",
            // Teredo: a public server and the client 8.8.8.8 (inverted).
            "2001:0:4136:e378:8000:63bf:f7f7:f7f7",
            // ISATAP with a public IPv4 address.
            "2001:470::5efe:808:808",
        ] {
            assert!(!forbidden_ip(good.parse().unwrap()), "{good} must be allowed");
        }
    }

    #[tokio::test]
    async fn urls() {
        assert!(check_url("ftp://example.com/x", true).await.is_err());
        assert!(check_url("not a url", true).await.is_err());
        assert!(check_url("http://127.0.0.1:9/hook", true).await.is_ok(), "allowed when private targets are");
        for bad in [
            "http://localhost/x",
            "http://LOCALHOST./x",
            "http://api.localhost/x",
            "http://[::ffff:127.0.0.1]/x",
            "http://[::ffff:0:a9fe:a9fe]/",
            "http://[::ffff:0:127.0.0.1]:8080/x",
            "http://169.254.169.254/latest",
        ] {
            assert!(check_url(bad, false).await.is_err(), "{bad}");
        }
    }
}
