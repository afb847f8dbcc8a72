//! How a request reached Capstan. Capstan serves plain HTTP only; a
//! request counts as HTTPS when it comes from a proxy the operator lists in
//! `trusted_proxies` and that proxy says so in `Forwarded: proto=https` or
//! `X-Forwarded-Proto: https`. From anyone else those headers are ignored,
//! so a client cannot talk its way into (or out of) a `Secure` cookie.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;

use super::AppState;
use crate::config::TrustedProxy;

/// Whether the browser's side of this request was encrypted, and the
/// address it came from.
pub(crate) struct Transport {
    pub https: bool,
    /// The client's address: the peer's, or, from a trusted proxy, the
    /// address that proxy says it forwarded for. `None` only when the
    /// server was not told its peers (a router built without them).
    pub client: Option<IpAddr>,
}

impl FromRequestParts<AppState> for Transport {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
        Ok(Transport {
            https: forwarded_https(peer, &parts.headers, &state.trusted_proxies),
            client: client_address(peer, &parts.headers, &state.trusted_proxies),
        })
    }
}

/// True when `peer` is a trusted proxy and the hop it added says `https`.
pub(crate) fn forwarded_https(peer: Option<IpAddr>, headers: &HeaderMap, trusted: &[TrustedProxy]) -> bool {
    let Some(peer) = peer else { return false };
    if !trusted.iter().any(|t| t.contains(peer)) {
        return false;
    }
    // The last element is the one the nearest proxy — the trusted one — added.
    if let Some(forwarded) = last_value(headers, "forwarded") {
        return forwarded.split(';').filter_map(|pair| pair.split_once('=')).any(|(k, v)| {
            k.trim().eq_ignore_ascii_case("proto") && v.trim().trim_matches('"').eq_ignore_ascii_case("https")
        });
    }
    last_value(headers, "x-forwarded-proto").is_some_and(|proto| proto.eq_ignore_ascii_case("https"))
}

/// The client behind a request: `peer` itself, unless `peer` is a trusted
/// proxy, whose last hop (`Forwarded: for=`, else `X-Forwarded-For`) names
/// the client. A trusted proxy that names none, or names something that is
/// not an address, leaves the proxy as the client.
pub(crate) fn client_address(peer: Option<IpAddr>, headers: &HeaderMap, trusted: &[TrustedProxy]) -> Option<IpAddr> {
    let peer = peer?;
    if !trusted.iter().any(|t| t.contains(peer)) {
        return Some(peer);
    }
    let named = match last_value(headers, "forwarded") {
        Some(forwarded) => forwarded.split(';').filter_map(|pair| pair.split_once('=')).find_map(|(k, v)| {
            k.trim().eq_ignore_ascii_case("for").then(|| forwarded_node(v.trim().trim_matches('"'))).flatten()
        }),
        None => last_value(headers, "x-forwarded-for").and_then(|v| forwarded_node(&v)),
    };
    Some(named.unwrap_or(peer))
}

/// An address as proxies write it: `192.0.2.1`, `192.0.2.1:4711`,
/// `[2001:db8::1]` or `[2001:db8::1]:4711`.
fn forwarded_node(node: &str) -> Option<IpAddr> {
    if let Ok(ip) = node.parse() {
        return Some(ip);
    }
    if let Some(v6) = node.strip_prefix('[') {
        return v6.split(']').next()?.parse().ok();
    }
    node.rsplit_once(':').and_then(|(host, _)| host.parse().ok())
}

/// True when `peer` is this machine and no proxy handled the request: a
/// proxy on loopback would make every outside request look local, so any
/// forwarding header makes it not local.
pub(crate) fn local_and_unproxied(peer: Option<IpAddr>, headers: &HeaderMap) -> bool {
    let local = peer.is_some_and(|ip| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(v6.is_loopback(), |v4| v4.is_loopback()),
        IpAddr::V4(v4) => v4.is_loopback(),
    });
    local && ["forwarded", "x-forwarded-for", "x-forwarded-host", "x-real-ip"].iter().all(|h| !headers.contains_key(*h))
}

/// The last comma-separated element over every instance of header `name`.
fn last_value(headers: &HeaderMap, name: &str) -> Option<String> {
    let values: Vec<&str> = headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).collect();
    values.last()?.rsplit(',').next().map(|v| v.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_a_direct_request_from_this_machine_is_local() {
        let none = headers(&[]);
        for local in ["127.0.0.1", "::1", "::ffff:127.0.0.1"] {
            assert!(local_and_unproxied(Some(local.parse().unwrap()), &none), "{local}");
        }
        assert!(!local_and_unproxied(Some("192.168.1.9".parse().unwrap()), &none));
        assert!(!local_and_unproxied(None, &none));
        let proxied = headers(&[("x-forwarded-for", "203.0.113.7")]);
        assert!(!local_and_unproxied(Some("127.0.0.1".parse().unwrap()), &proxied), "a local proxy's request");
    }

    #[test]
    fn the_client_is_the_peer_unless_a_trusted_proxy_names_it() {
        let trusted = ["10.0.0.0/8".parse().unwrap()];
        let proxy = Some("10.0.0.5".parse().unwrap());
        let stranger: Option<IpAddr> = Some("192.168.1.9".parse().unwrap());
        let named = headers(&[("x-forwarded-for", "198.51.100.1, 203.0.113.7")]);
        assert_eq!(client_address(stranger, &named, &trusted), stranger);
        assert_eq!(client_address(proxy, &named, &trusted), Some("203.0.113.7".parse().unwrap()));
        let forwarded = headers(&[("forwarded", "for=\"[2001:db8::1]:4711\";proto=https")]);
        assert_eq!(client_address(proxy, &forwarded, &trusted), Some("2001:db8::1".parse().unwrap()));
        assert_eq!(client_address(proxy, &headers(&[("x-forwarded-for", "unknown")]), &trusted), proxy);
        assert_eq!(client_address(proxy, &headers(&[]), &trusted), proxy);
        assert_eq!(client_address(None, &named, &trusted), None);
    }

    #[test]
    fn only_a_trusted_proxy_is_believed() {
        let trusted = ["10.0.0.0/8".parse().unwrap()];
        let proxy = Some("10.0.0.5".parse().unwrap());
        let stranger = Some("192.168.1.9".parse().unwrap());
        let https = headers(&[("x-forwarded-proto", "https")]);
        assert!(forwarded_https(proxy, &https, &trusted));
        assert!(!forwarded_https(stranger, &https, &trusted));
        assert!(!forwarded_https(None, &https, &trusted));
        assert!(!forwarded_https(proxy, &headers(&[]), &trusted));
        // The hop the trusted proxy added counts, not what the client sent.
        assert!(!forwarded_https(proxy, &headers(&[("x-forwarded-proto", "https, http")]), &trusted));
        assert!(forwarded_https(proxy, &headers(&[("forwarded", "for=1.2.3.4;proto=\"HTTPS\"")]), &trusted));
        assert!(!forwarded_https(
            proxy,
            &headers(&[("forwarded", "proto=https"), ("forwarded", "for=10.0.0.5;proto=http")]),
            &trusted
        ));
        // Forwarded wins over the older header when both are present.
        assert!(!forwarded_https(proxy, &headers(&[("forwarded", "for=x"), ("x-forwarded-proto", "https")]), &trusted));
    }
}
