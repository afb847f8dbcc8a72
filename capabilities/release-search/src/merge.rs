//! Merging results across indexers: the same torrent listed by two
//! indexers (same info-hash) becomes one release that names both, keeping
//! the listing with the most seeders since that is the freshest count.
//! Releases without an info-hash cannot be matched and stay as they are.

use std::collections::HashMap;

use crate::output::Release;

/// Merges duplicates and orders the result by seeders, most first.
pub fn merge(releases: Vec<Release>) -> Vec<Release> {
    let mut merged: Vec<Release> = Vec::with_capacity(releases.len());
    let mut by_hash: HashMap<String, usize> = HashMap::new();
    for release in releases {
        let Some(hash) = release.infohash.clone() else {
            merged.push(release);
            continue;
        };
        match by_hash.get(&hash) {
            Some(&at) => combine(&mut merged[at], release),
            None => {
                by_hash.insert(hash, merged.len());
                merged.push(release);
            }
        }
    }
    // Stable, so equal seeders keep the indexers' own order.
    merged.sort_by_key(|r| std::cmp::Reverse(r.seeders.unwrap_or(0)));
    merged
}

/// Folds `other` into `kept`, which ends up as the better-seeded listing
/// with the union of indexers and any field only the other one had.
fn combine(kept: &mut Release, mut other: Release) {
    if other.seeders.unwrap_or(0) > kept.seeders.unwrap_or(0) {
        std::mem::swap(kept, &mut other);
    }
    for indexer in other.indexers {
        if !kept.indexers.contains(&indexer) {
            kept.indexers.push(indexer);
        }
    }
    kept.indexers.sort_by_key(|name| crate::INDEXER_SERVICES.iter().position(|s| s == name));
    fill(&mut kept.magnet_url, other.magnet_url);
    fill(&mut kept.download_url, other.download_url);
    fill(&mut kept.details_url, other.details_url);
    fill(&mut kept.size_bytes, other.size_bytes);
    fill(&mut kept.imdb_id, other.imdb_id);
    fill(&mut kept.tmdb_id, other.tmdb_id);
    fill(&mut kept.tvdb_id, other.tvdb_id);
    fill(&mut kept.published, other.published);
    for category in other.categories {
        if !kept.categories.contains(&category) {
            kept.categories.push(category);
        }
    }
    kept.categories.sort_unstable();
}

fn fill<T>(slot: &mut Option<T>, other: Option<T>) {
    if slot.is_none() {
        *slot = other;
    }
}
