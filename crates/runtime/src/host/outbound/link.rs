//! Links a service gave out: an indexer's download link is an absolute URL
//! on the indexer's own address but often outside its API's base path
//! (Jackett answers searches under `/api/v2.0/indexers/<id>/results/torznab`
//! and serves files under `/dl/<id>/`; Prowlarr searches under `/<id>/api`
//! and serves `/<id>/download`). A component may therefore name, instead of
//! a path, such a link: the host sends it only as a read (GET or HEAD), only
//! to the service's own origin (scheme, host and port of its base URL —
//! the boundary browsers draw too), with the same path checks as any path,
//! and with the service's credential added. Where the link carries the
//! credential as a query parameter, the component received it masked (see
//! `secrets`); a parameter whose value is exactly the mask is a slot the
//! host fills with the service's query credential, so a link such as
//! Jackett's `?jackett_apikey=…` works although no component ever held the
//! key.

use percent_encoding::percent_decode_str;

use super::path;
use super::secrets::MASK;
use crate::bindings::capstan::host::types::HostError;

/// A checked link.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// `scheme://host[:port]`, as the URL parser serialises it.
    pub origin: String,
    /// The path as given (still encoded), checked by [`path::decoded`].
    pub raw_path: String,
    /// The path decoded, as a server routes it.
    pub decoded: String,
    /// The query's pairs as given (still encoded); `None` marks a slot for
    /// the credential, with the parameter's raw name.
    pub query: Vec<QueryPart>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum QueryPart {
    /// A pair kept byte for byte: servers read some values (Jackett's
    /// `path`) in the exact encoding they wrote them.
    Kept(String),
    /// `name=` + the credential.
    Slot(String),
}

/// Whether `path` is a link rather than a path.
pub(crate) fn is_link(path: &str) -> bool {
    let lower = path.get(..8).unwrap_or(path).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

fn decode(text: &str) -> String {
    percent_decode_str(&text.replace('+', " ")).decode_utf8_lossy().into_owned()
}

/// Checks a link and splits it; `reserved` are the query names only the
/// host may set (the credential's own name may appear only as a slot).
pub fn parse(link: &str, reserved: &[&str], credential: Option<&str>) -> Result<Link, HostError> {
    let bad = |why: &str| HostError::Invalid(format!("link {why}"));
    let without_fragment = link.split_once('#').map_or(link, |(before, _)| before);
    if without_fragment.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(bad("must not contain spaces or control characters"));
    }
    let url = reqwest::Url::parse(without_fragment).map_err(|e| bad(&format!("is not a URL: {e}")))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("must not carry a user name or password"));
    }
    let host = url.host_str().ok_or_else(|| bad("names no host"))?.to_ascii_lowercase();
    // The path and query as written, not as the parser resolved them: a
    // dot segment the parser would fold away is refused like any other.
    // So the text's address must be exactly the parsed one, or the two
    // would disagree on where the path starts (`http:///dl` is host `dl`).
    let after_scheme = without_fragment.split_once("://").map_or("", |(_, rest)| rest);
    let end = after_scheme.find(['/', '?']).unwrap_or(after_scheme.len());
    let (authority, path_and_query) = after_scheme.split_at(end);
    let port = url.port_or_known_default().map(|p| format!(":{p}")).unwrap_or_default();
    let authority = authority.to_ascii_lowercase();
    if authority != host && authority != format!("{host}{port}") {
        return Err(bad("has an address the host cannot read unambiguously"));
    }
    let path_and_query =
        if path_and_query.starts_with('/') { path_and_query.to_string() } else { format!("/{path_and_query}") };
    let raw_path = path_and_query.split('?').next().unwrap_or("/");
    let decoded = path::decoded(raw_path).map_err(|why| bad(&format!("path {why}")))?;
    let raw_query = path_and_query.split_once('?').map_or("", |(_, q)| q);
    let raw_path = raw_path.to_string();
    let mut query = Vec::new();
    for pair in raw_query.split('&').filter(|p| !p.is_empty()) {
        let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = decode(raw_name);
        let value = decode(raw_value);
        if reserved.iter().any(|r| r.eq_ignore_ascii_case(&name)) {
            return Err(bad(&format!("query parameter {name} is reserved for the host")));
        }
        if value == MASK {
            if credential.is_none() {
                return Err(bad(&format!(
                    "asks for a credential in {name}, but the service's credential is not a query parameter"
                )));
            }
            query.push(QueryPart::Slot(raw_name.to_string()));
        } else if credential.is_some_and(|c| c.eq_ignore_ascii_case(&name)) {
            return Err(bad(&format!("query parameter {name} is reserved for the host")));
        } else {
            query.push(QueryPart::Kept(pair.to_string()));
        }
    }
    Ok(Link { origin: url.origin().ascii_serialization(), raw_path, decoded, query })
}

impl Link {
    /// Whether the link has a slot for the credential.
    pub(crate) fn has_slot(&self) -> bool {
        self.query.iter().any(|p| matches!(p, QueryPart::Slot(_)))
    }

    /// The URL to send: slots filled with `secret` (when there is one),
    /// then `extra` pairs appended.
    pub fn url(&self, secret: Option<&str>, extra: &[(String, String)]) -> Result<reqwest::Url, HostError> {
        let encoded: String =
            secret.map(|s| form_urlencoded::byte_serialize(s.as_bytes()).collect()).unwrap_or_default();
        let pairs: Vec<String> = self
            .query
            .iter()
            .map(|part| match part {
                QueryPart::Kept(pair) => pair.clone(),
                QueryPart::Slot(name) => format!("{name}={encoded}"),
            })
            .collect();
        let mut text = format!("{}{}", self.origin, self.raw_path);
        if !pairs.is_empty() {
            text.push('?');
            text.push_str(&pairs.join("&"));
        }
        let mut url =
            reqwest::Url::parse(&text).map_err(|e| HostError::Invalid(format!("link does not form a URL: {e}")))?;
        if !extra.is_empty() {
            url.query_pairs_mut().extend_pairs(extra);
        }
        Ok(url)
    }

    /// The path as the service's operation table sees it: below the base
    /// path when the link is under it, else the whole path.
    pub(crate) fn relative_to(&self, base: &reqwest::Url) -> String {
        let base_path = percent_decode_str(base.path()).decode_utf8_lossy().trim_end_matches('/').to_string();
        match self.decoded.strip_prefix(&base_path) {
            Some(rest) if !base_path.is_empty() && (rest.is_empty() || rest.starts_with('/')) => {
                if rest.is_empty() {
                    "/".to_string()
                } else {
                    rest.to_string()
                }
            }
            _ => self.decoded.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Link, QueryPart, is_link, parse};

    const RESERVED: &[&str] = &["_method"];

    fn ok(link: &str) -> Link {
        parse(link, RESERVED, Some("apikey")).unwrap()
    }

    #[test]
    fn jackett_and_prowlarr_links_keep_their_query_and_fill_the_masked_key() {
        let jackett = ok("http://jackett:9117/dl/yts/?jackett_apikey=%5Bredacted%5D&path=Q2ZESjhB%2Bx&file=Dune");
        assert_eq!(jackett.origin, "http://jackett:9117");
        assert_eq!(jackett.decoded, "/dl/yts/");
        let url = jackett.url(Some("k e/y"), &[]).unwrap();
        assert_eq!(url.as_str(), "http://jackett:9117/dl/yts/?jackett_apikey=k+e%2Fy&path=Q2ZESjhB%2Bx&file=Dune");
        let base = reqwest::Url::parse("http://jackett:9117/api/v2.0/indexers/yts/results/torznab").unwrap();
        assert_eq!(jackett.relative_to(&base), "/dl/yts/");

        let prowlarr = ok("http://prowlarr:9696/1/download?apikey=[redacted]&link=abc&file=Dune");
        assert!(prowlarr.has_slot());
        assert_eq!(prowlarr.query[0], QueryPart::Slot("apikey".into()));
        let base = reqwest::Url::parse("http://prowlarr:9696/1/api").unwrap();
        assert_eq!(prowlarr.relative_to(&base), "/1/download");
        let under = ok("http://prowlarr:9696/1/api/download?x=1");
        assert_eq!(under.relative_to(&base), "/download");
        assert!(!under.has_slot());
        assert_eq!(under.url(None, &[("apikey".into(), "k".into())]).unwrap().query(), Some("x=1&apikey=k"));
    }

    #[test]
    fn links_a_server_could_reshape_or_that_set_the_key_are_refused() {
        for bad in [
            "http://jackett:9117/dl/../api/v2.0/server/config",
            "http://jackett:9117/dl/%2e%2e/x",
            "http://user:pw@jackett:9117/dl/x",
            "http://jackett:9117/dl//x",
            "http://jackett:9117/dl/x?apikey=guessed",
            "http://jackett:9117/dl/x?_method=DELETE",
            "http://jackett:9117/dl x",
            "http://jackett\\@evil:9117/dl",
            "http:///dl",
            "http://jackett:9117@evil/dl",
            "http://JACKETT:09117/dl",
        ] {
            assert!(parse(bad, RESERVED, Some("apikey")).is_err(), "{bad} was accepted");
        }
        assert!(parse("http://j/dl?key=[redacted]", RESERVED, None).is_err(), "no query credential to fill");
        assert!(is_link("HTTPS://x/y") && is_link("http://x") && !is_link("/dl/x") && !is_link("magnet:?xt"));
    }
}
