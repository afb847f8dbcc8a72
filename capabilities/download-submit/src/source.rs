//! Where a plan's `.torrent` file can be fetched from. A release's download
//! URL names an indexer's host, but a component may only name services, so
//! the operator says which configured service serves which URLs: the
//! setting `torrent_sources` holds `service=url-prefix` entries, e.g.
//! `torznab=http://jackett:9117`. A URL under a prefix is fetched through
//! that service (the host adds its credentials); any other URL is handed to
//! qBittorrent as it is.

use capstan_sdk::Failure;
use capstan_sdk::host::Request;

/// The services a `.torrent` may be fetched through; the descriptor lists
/// them, so the host lets this component reach whichever are configured.
pub const SOURCE_SERVICES: &[&str] = &["torznab", "torznab-2", "torznab-3"];

/// One `service=prefix` entry of `torrent_sources`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub service: String,
    /// The URL prefix, without a trailing `/`.
    pub prefix: String,
}

/// Reads `torrent_sources`: entries separated by whitespace or commas.
/// A bad entry is an operator mistake worth stopping for, not something to
/// skip quietly, since skipping would hand qBittorrent a URL it may not be
/// able to fetch.
pub fn parse(setting: Option<&str>) -> Result<Vec<Source>, Failure> {
    let Some(setting) = setting else { return Ok(Vec::new()) };
    let bad = |m: String| Failure::InvalidInput(format!("setting torrent_sources: {m}"));
    let mut sources = Vec::new();
    for entry in setting.split([',', ' ', '\n', '\t', '\r']).filter(|e| !e.is_empty()) {
        let (service, prefix) =
            entry.split_once('=').ok_or_else(|| bad(format!("{entry:?} is not service=url-prefix")))?;
        if !SOURCE_SERVICES.contains(&service) {
            return Err(bad(format!("service {service:?} is not one of {}", SOURCE_SERVICES.join(", "))));
        }
        let prefix = prefix.trim_end_matches('/');
        let lower = prefix.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) || prefix.len() <= "https://".len() {
            return Err(bad(format!("{prefix:?} is not an http(s) URL prefix")));
        }
        sources.push(Source { service: service.to_string(), prefix: prefix.to_string() });
    }
    Ok(sources)
}

/// The request that fetches `url` through the source whose prefix it falls
/// under (the longest, when several do), or `None` when none does.
pub fn request_for(url: &str, sources: &[Source]) -> Option<Request> {
    let url = url.trim();
    let url = url.split_once('#').map_or(url, |(before, _)| before);
    let (source, rest) = sources
        .iter()
        .filter_map(|s| {
            let rest = url.strip_prefix(&s.prefix)?;
            // The prefix must end at a path boundary: `http://a/dl` is not
            // a prefix of `http://a/dlx`.
            (rest.is_empty() || rest.starts_with(['/', '?'])).then_some((s, rest))
        })
        .max_by_key(|(s, _)| s.prefix.len())?;
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let path = if path.is_empty() { "/" } else { path };
    let mut req = Request::get(&source.service, path);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        // The host encodes query pairs itself; give it the decoded text.
        req = req.query(&decode(name), decode(value));
    }
    Some(req)
}

/// Decodes `%XX` escapes and `+` (a space in a query).
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() && bytes[i + 1].is_ascii_hexdigit() && bytes[i + 2].is_ascii_hexdigit() => {
                let hex = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
                out.push(hex(bytes[i + 1]) * 16 + hex(bytes[i + 2]));
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources() -> Vec<Source> {
        parse(Some("torznab=http://jackett:9117/, torznab-2=https://tracker.example/api/dl")).unwrap()
    }

    #[test]
    fn a_url_under_a_prefix_is_fetched_through_its_service_with_its_query() {
        let req =
            request_for("http://jackett:9117/dl/idx/?jackett_apikey=k&path=a%2Bb%20c&file=X+Y", &sources()).unwrap();
        assert_eq!((req.service.as_str(), req.path.as_str()), ("torznab", "/dl/idx/"));
        let query: Vec<(&str, &str)> = req.query.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(query, [("jackett_apikey", "k"), ("path", "a+b c"), ("file", "X Y")]);
        let req = request_for("https://tracker.example/api/dl/55.torrent#frag", &sources()).unwrap();
        assert_eq!((req.service.as_str(), req.path.as_str()), ("torznab-2", "/55.torrent"));
        assert!(req.query.is_empty());
    }

    #[test]
    fn other_urls_are_not_fetched() {
        assert_eq!(request_for("https://tracker.example/api/dlx/55.torrent", &sources()), None);
        assert_eq!(request_for("https://elsewhere.example/55.torrent", &sources()), None);
        assert_eq!(request_for("magnet:?xt=urn:btih:abc", &sources()), None);
        assert_eq!(request_for("http://jackett:9117/x", &[]), None);
    }

    #[test]
    fn bad_entries_are_refused_with_the_setting_named() {
        for bad in ["torznab", "qbittorrent=http://q:8080", "torznab=ftp://x", "torznab=http://"] {
            let failure = parse(Some(bad)).unwrap_err();
            assert!(failure.to_string().contains("setting torrent_sources"), "{bad}: {failure}");
        }
        assert_eq!(parse(None).unwrap(), []);
        assert_eq!(decode("100%"), "100%", "a stray % stays as it is");
    }
}
