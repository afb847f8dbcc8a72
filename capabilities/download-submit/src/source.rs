//! What a plan's release is handed to qBittorrent as, in the order that
//! works with real indexers and clients:
//!
//! 1. The indexer's download link, fetched through the host as the indexer
//!    service whose address it is on (the plan's own indexer first). The
//!    host adds the indexer's key — also into a parameter whose value is
//!    the `[redacted]` slot `release.search` left where the key was — so
//!    neither this component nor qBittorrent's logs ever hold it. The file
//!    is uploaded; qBittorrent needs no swarm to learn the metadata. An
//!    indexer that redirects to a magnet (a magnet-only tracker) gives that
//!    magnet; one that redirects elsewhere gives a link qBittorrent fetches.
//! 2. The indexer's magnet as it gave it, trackers kept.
//! 3. A download link on no configured indexer's address, for qBittorrent
//!    to fetch itself — unless it needs a key, which only the host holds.
//! 4. Only when the indexer gave no link at all, a magnet rebuilt from the
//!    infohash: no trackers, so it starts only where DHT or peer exchange
//!    finds peers. The plan's `handOff` said so before it was approved.
//!
//! An indexer refusing the link (4xx) is a failure with the reason, before
//! anything reaches qBittorrent — never an outcome nobody can tell.

use capstan_sdk::host::{Level, Request, Response, log, outbound};
use capstan_sdk::qbittorrent::AddTorrent;
use capstan_sdk::{Failure, HostError};

/// The indexer services (and RSS feeds) a link may be fetched through; the descriptor
/// lists them, so the host lets this component reach whichever are set up.
pub const SOURCE_SERVICES: &[&str] = &["torznab", "torznab-2", "torznab-3", "rss", "rss-2", "rss-3"];

/// The slot `release.search` leaves where a link carried a key.
const KEY_SLOT: &str = "%5bredacted%5d";

/// Redirects followed on the indexer's own address (Jackett's `/dl/` can
/// answer with one more hop on the same server).
const MAX_HOPS: usize = 3;

/// What the plan froze about where its release comes from.
#[derive(Debug, Default, Clone)]
pub struct Links<'a> {
    pub indexer: Option<&'a str>,
    pub title: Option<&'a str>,
    pub infohash: Option<&'a str>,
    pub download_url: Option<&'a str>,
    pub magnet_url: Option<&'a str>,
}

fn is_magnet(link: &str) -> bool {
    link.get(..7).is_some_and(|head| head.eq_ignore_ascii_case("magnet:"))
}

fn is_http(link: &str) -> bool {
    let head = link.get(..8).unwrap_or(link).to_ascii_lowercase();
    head.starts_with("http://") || head.starts_with("https://")
}

fn needs_key(link: &str) -> bool {
    link.to_ascii_lowercase().contains(KEY_SLOT) || link.contains("[redacted]")
}

/// What fetching a link through an indexer came to.
enum Fetched {
    File(Vec<u8>),
    /// The indexer sent the client elsewhere: a magnet, or a URL on
    /// another server.
    Redirect(String),
    /// No configured indexer has this link's address; why, per service.
    NotOurs(Vec<String>),
}

fn location(resp: &Response) -> Option<String> {
    resp.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("location")).map(|(_, v)| v.trim().to_string())
}

/// Reads one indexer's answer to its link.
fn answer(service: &str, resp: Response) -> Result<Result<Vec<u8>, String>, Failure> {
    let status = resp.status;
    match status {
        200 if resp.body.first() == Some(&b'd') => Ok(Ok(resp.body)),
        200 => Err(Failure::Unavailable(format!(
            "indexer {service} answered the download link with something that is not a torrent file ({} bytes{}); open the release on the indexer to see what it serves",
            resp.body.len(),
            if resp.body.first() == Some(&b'<') { ", a web page" } else { "" }
        ))),
        300..=399 => match location(&resp) {
            Some(to) => Ok(Err(to)),
            None => Err(Failure::Unavailable(format!(
                "indexer {service} redirected the download link ({status}) to nowhere"
            ))),
        },
        401 | 403 => Err(Failure::Denied(format!(
            "indexer {service} refused the download link ({status}): check its API key under Services and press Test, then retry"
        ))),
        404 | 410 => Err(Failure::NotFound(format!(
            "indexer {service} no longer has this release ({status}); pick another release"
        ))),
        400..=499 => Err(Failure::Denied(format!("indexer {service} refused the download link ({status})"))),
        _ => Err(Failure::Unavailable(format!(
            "indexer {service} failed to serve the download link ({status}); it is tried again later"
        ))),
    }
}

/// `scheme://authority` of an absolute http(s) link, lowercased.
fn origin_of(link: &str) -> Option<String> {
    let (scheme, rest) = link.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    Some(format!("{scheme}://{authority}").to_ascii_lowercase())
}

/// Where a redirect points: a relative `Location` stays on `from`'s address.
fn resolve(from: &str, to: &str) -> String {
    match (to.starts_with('/') && !to.starts_with("//"), origin_of(from)) {
        (true, Some(origin)) => format!("{origin}{to}"),
        _ => to.to_string(),
    }
}

/// Fetches `link` through the first indexer service whose address it is on.
fn fetch(link: &str, indexer: Option<&str>) -> Result<Fetched, Failure> {
    let mut order: Vec<&str> = indexer.filter(|i| SOURCE_SERVICES.contains(i)).into_iter().collect();
    order.extend(SOURCE_SERVICES.iter().copied().filter(|s| Some(*s) != indexer));
    let mut why_not = Vec::new();
    'services: for service in order {
        let mut url = link.to_string();
        for _ in 0..MAX_HOPS {
            let resp = match outbound::read(Request::link(service, &url)) {
                Ok(resp) => resp,
                // Not this service's address, not set up, or a link the
                // host will not send as this service: try the next one.
                Err(HostError::Invalid(m) | HostError::NotFound(m) | HostError::Denied(m)) => {
                    why_not.push(format!("{service}: {m}"));
                    continue 'services;
                }
                Err(HostError::Unavailable(m)) => {
                    return Err(Failure::Unavailable(format!(
                        "indexer {service} could not serve the download link: {m}"
                    )));
                }
                Err(e) => return Err(e.into()),
            };
            match answer(service, resp)? {
                Ok(bytes) => return Ok(Fetched::File(bytes)),
                // Another hop on the indexer's own address is its to serve.
                Err(next) if is_http(&resolve(&url, &next)) && origin_of(&resolve(&url, &next)) == origin_of(&url) => {
                    url = resolve(&url, &next);
                }
                Err(next) => return Ok(Fetched::Redirect(next)),
            }
        }
        return Err(Failure::Unavailable(format!("indexer {service} redirected the download link too often")));
    }
    Ok(Fetched::NotOurs(why_not))
}

/// A magnet link for `hash`, named after the release so qBittorrent shows a
/// readable name while it looks for the metadata.
pub fn magnet(hash: &str, title: Option<&str>) -> String {
    let mut link = format!("magnet:?xt=urn:btih:{hash}");
    if let Some(title) = title.filter(|t| !t.trim().is_empty()) {
        link.push_str("&dn=");
        for byte in title.trim().bytes() {
            match byte {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => link.push(byte as char),
                _ => link.push_str(&format!("%{byte:02X}")),
            }
        }
    }
    link
}

/// What to hand qBittorrent for `links` (see the module's order).
pub fn what_to_add(links: &Links) -> Result<AddTorrent, Failure> {
    let present = |l: Option<&str>| l.map(str::trim).filter(|l| !l.is_empty()).map(str::to_string);
    let link = present(links.download_url);
    let magnet = present(links.magnet_url).or_else(|| link.clone().filter(|l| is_magnet(l)));
    if let Some(link) = link.filter(|l| is_http(l)) {
        let fetched = fetch(&link, links.indexer);
        match fetched {
            Ok(Fetched::File(bytes)) => {
                return Ok(AddTorrent::file(format!("{}.torrent", links.infohash.unwrap_or("release")), bytes));
            }
            Ok(Fetched::Redirect(to)) if needs_key(&to) => {
                return Err(Failure::Denied(
                    "the indexer sent the download elsewhere, to a link that needs a key only Capstan holds".into(),
                ));
            }
            Ok(Fetched::Redirect(to)) => return Ok(AddTorrent::url(to)),
            Ok(Fetched::NotOurs(why)) if needs_key(&link) => {
                return Err(Failure::Denied(format!(
                    "the download link needs the indexer's key, but it is on no configured indexer's address ({}); check the indexer's URL under Services",
                    why.join("; ")
                )));
            }
            Ok(Fetched::NotOurs(_)) => return Ok(AddTorrent::url(magnet.unwrap_or(link))),
            // The magnet as given names the same torrent, trackers and all.
            Err(e) if magnet.is_some() => {
                log(Level::Warn, &format!("the download link failed ({e}); adding the indexer's magnet instead"));
            }
            Err(e) => return Err(e),
        }
    }
    match (magnet, links.infohash) {
        (Some(magnet), _) => Ok(AddTorrent::url(magnet)),
        (None, Some(hash)) => {
            log(Level::Info, "the indexer gave no link: adding a magnet built from the infohash, without trackers");
            Ok(AddTorrent::url(self::magnet(hash, links.title)))
        }
        (None, None) => Err(Failure::InvalidInput(
            "the plan's release has neither an infohash nor a download link; nothing can be added".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::{is_http, is_magnet, magnet, needs_key, origin_of, resolve};

    #[test]
    fn links_are_told_apart() {
        assert!(is_magnet("MAGNET:?xt=urn:btih:x") && !is_magnet("http://x"));
        assert!(is_http("HTTPS://x") && is_http("http://x") && !is_http("magnet:?x"));
        assert!(needs_key("http://j/dl/x?jackett_apikey=%5Bredacted%5D&path=p"));
        assert!(needs_key("http://j/dl/x?apikey=[redacted]"));
        assert!(!needs_key("http://j/dl/x?path=p"));
        assert_eq!(magnet("ab", Some("A (b)")), "magnet:?xt=urn:btih:ab&dn=A%20%28b%29");
        assert_eq!(origin_of("HTTP://J:9117/dl?x").as_deref(), Some("http://j:9117"));
        assert_eq!(resolve("http://j:9117/dl/x", "/dl/y?z"), "http://j:9117/dl/y?z");
        assert_eq!(resolve("http://j:9117/dl/x", "//evil/y"), "//evil/y");
        assert_eq!(resolve("http://j:9117/dl/x", "magnet:?xt=1"), "magnet:?xt=1");
    }
}
