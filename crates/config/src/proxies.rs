//! `trusted_proxies`: the reverse proxies whose forwarding headers Capstan
//! believes. Capstan itself speaks plain HTTP; whether a request reached
//! the proxy over HTTPS is only known from what a trusted proxy says.

use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Deserializer};

/// One trusted proxy: an address (`10.0.0.5`, `::1`) or a network
/// (`10.0.0.0/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrustedProxy(pub IpNet);

impl TrustedProxy {
    /// Whether a connection from `peer` comes from this proxy.
    pub fn contains(&self, peer: IpAddr) -> bool {
        // A v4 client on a dual-stack socket shows up as ::ffff:a.b.c.d.
        self.0.contains(&peer.to_canonical())
    }
}

impl std::str::FromStr for TrustedProxy {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Ok(net) = text.parse::<IpNet>() {
            return Ok(TrustedProxy(net.trunc()));
        }
        text.parse::<IpAddr>()
            .map(|ip| TrustedProxy(IpNet::from(ip)))
            .map_err(|_| format!("trusted_proxies: {text:?} is neither an IP address nor a network such as 10.0.0.0/8"))
    }
}

impl<'de> Deserialize<'de> for TrustedProxy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

/// One entry of `public_origins`: `scheme://host[:port]`, kept in lower
/// case as browsers send it in `Origin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicOrigin(pub String);

impl std::str::FromStr for PublicOrigin {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let origin = text.trim().trim_end_matches('/').to_ascii_lowercase();
        let host = origin.strip_prefix("https://").or_else(|| origin.strip_prefix("http://"));
        match host {
            Some(host) if !host.is_empty() && !host.contains(['/', '?', '#', '@', ' ']) => Ok(PublicOrigin(origin)),
            _ => Err(format!(
                "public_origins: {text:?} is not an origin such as https://capstan.example.org (a scheme and a host, \
                 an optional port, no path)"
            )),
        }
    }
}

impl<'de> Deserialize<'de> for PublicOrigin {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_origins_are_a_scheme_and_a_host() {
        let o: PublicOrigin = "HTTPS://Capstan.Example.org:8443/".parse().unwrap();
        assert_eq!(o.0, "https://capstan.example.org:8443");
        for bad in ["capstan.example.org", "https://", "https://a.example/path", "ftp://a.example", "null"] {
            assert!(bad.parse::<PublicOrigin>().is_err(), "{bad}");
        }
    }

    #[test]
    fn addresses_and_networks() {
        let one: TrustedProxy = "127.0.0.1".parse().unwrap();
        assert!(one.contains("127.0.0.1".parse().unwrap()));
        assert!(one.contains("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!one.contains("127.0.0.2".parse().unwrap()));
        let net: TrustedProxy = "10.1.2.3/8".parse().unwrap();
        assert!(net.contains("10.200.0.1".parse().unwrap()));
        assert!(!net.contains("11.0.0.1".parse().unwrap()));
        assert!("proxy.lan".parse::<TrustedProxy>().is_err());
        assert!("10.0.0.0/40".parse::<TrustedProxy>().is_err());
    }
}
