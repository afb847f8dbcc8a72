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

/// Whether the browser's side of this request was encrypted.
pub struct Transport {
    pub https: bool,
}

impl FromRequestParts<AppState> for Transport {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
        Ok(Transport { https: forwarded_https(peer, &parts.headers, &state.trusted_proxies) })
    }
}

/// True when `peer` is a trusted proxy and the hop it added says `https`.
pub fn forwarded_https(peer: Option<IpAddr>, headers: &HeaderMap, trusted: &[TrustedProxy]) -> bool {
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

/// True when `peer` is this machine and no proxy handled the request: a
/// proxy on loopback would make every outside request look local, so any
/// forwarding header makes it not local.
pub fn local_and_unproxied(peer: Option<IpAddr>, headers: &HeaderMap) -> bool {
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
