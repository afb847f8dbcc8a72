//! Reading a [`FeedItem`] as a [`Release`]: which attribute or element
//! each field comes from, and the fallbacks feeds in the wild need.

use crate::date::rfc2822_to_rfc3339;
use crate::infohash;
use crate::output::Release;
use crate::redact::strip_credentials;
use crate::torznab::feed::FeedItem;

fn is_magnet(url: &str) -> bool {
    url.trim_start().to_ascii_lowercase().starts_with("magnet:")
}

fn is_http(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// Feeds write IMDb ids as `tt0133093`, `0133093` or `133093`.
fn imdb_id(raw: &str) -> Option<String> {
    let digits = raw.trim().trim_start_matches("tt");
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) || digits.trim_start_matches('0').is_empty() {
        return None;
    }
    Some(format!("tt{digits:0>7}"))
}

fn number<T: std::str::FromStr>(text: Option<&str>) -> Option<T> {
    text.and_then(|t| t.trim().parse().ok())
}

/// Interprets one item found on `indexer`.
pub fn from_item(item: FeedItem, indexer: &str) -> Release {
    let links = [item.attr("magneturl"), item.link.as_deref(), item.enclosure_url.as_deref(), item.guid.as_deref()];
    let magnet_url = links.iter().flatten().find(|u| is_magnet(u)).map(|u| strip_credentials(u.trim()));
    let download_url = [item.enclosure_url.as_deref(), item.link.as_deref()]
        .into_iter()
        .flatten()
        .find(|u| is_http(u))
        .map(|u| strip_credentials(u.trim()));
    let details_url = [item.comments.as_deref(), item.guid.as_deref()]
        .into_iter()
        .flatten()
        .find(|u| is_http(u))
        .map(strip_credentials);
    let infohash = item
        .attr("infohash")
        .and_then(infohash::normalise)
        .or_else(|| magnet_url.as_deref().and_then(infohash::from_magnet));

    let seeders: Option<u32> = number(item.attr("seeders"));
    let mut peers: Option<u32> = number(item.attr("peers"));
    let mut leechers: Option<u32> = number(item.attr("leechers"));
    // Torznab's `peers` counts seeders too; derive whichever is missing.
    match (seeders, peers, leechers) {
        (Some(s), None, Some(l)) => peers = Some(s.saturating_add(l)),
        (Some(s), Some(p), None) => leechers = Some(p.saturating_sub(s)),
        _ => {}
    }

    let mut categories: Vec<u32> = item.attrs_named("category").filter_map(|c| c.parse().ok()).collect();
    categories.sort_unstable();
    categories.dedup();

    let size_bytes = number(item.attr("size"))
        .or_else(|| number(item.size.as_deref()))
        .or_else(|| number(item.enclosure_length.as_deref()))
        .filter(|size: &u64| *size > 0);

    Release {
        indexers: vec![indexer.to_string()],
        size_bytes,
        seeders,
        leechers,
        peers,
        infohash,
        magnet_url,
        download_url,
        details_url,
        categories,
        imdb_id: item.attr("imdbid").or(item.attr("imdb")).and_then(imdb_id),
        tmdb_id: number(item.attr("tmdbid")).filter(|id| *id > 0),
        tvdb_id: number(item.attr("tvdbid")).filter(|id| *id > 0),
        published: item.pub_date.as_deref().map(|d| rfc2822_to_rfc3339(d).unwrap_or_else(|| d.to_string())),
        download_volume_factor: number(item.attr("downloadvolumefactor")),
        upload_volume_factor: number(item.attr("uploadvolumefactor")),
        title: item.title,
    }
}
