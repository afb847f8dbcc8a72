//! One search across indexers: for each configured indexer, read its caps,
//! plan the request, fetch and parse the feed (for `recent`, each RSS feed
//! too); then merge. One indexer
//! failing is reported beside the results; only when every configured
//! indexer fails does the whole search fail.

use capstan_sdk::Failure;

use crate::input::{DEFAULT_LIMIT, SearchInput};
use crate::output::{IndexerReport, Release, SearchOutput};
use crate::plan::plan;
use crate::torznab::{self, IndexerError, caps, feed};
use crate::{merge, release, rss};

/// What one indexer gave.
struct IndexerResult {
    report: IndexerReport,
    releases: Vec<Release>,
}

fn failed(indexer: &str, function: Option<&str>, searched_by: Vec<String>, error: String) -> IndexerResult {
    IndexerResult {
        report: IndexerReport {
            indexer: indexer.to_string(),
            function: function.map(str::to_string),
            searched_by,
            results: 0,
            error: Some(error),
        },
        releases: Vec::new(),
    }
}

/// Searches one indexer; `None` when the operator did not configure it.
fn search_indexer(indexer: &str, input: &SearchInput) -> Option<IndexerResult> {
    let caps_body = match torznab::get(indexer, &[("t", "caps".to_string())]) {
        Ok(body) => body,
        Err(IndexerError::NotConfigured) => return None,
        Err(IndexerError::Failed(why)) => return Some(failed(indexer, None, Vec::new(), why)),
    };
    let caps = match caps::parse(&caps_body) {
        Ok(caps) => caps,
        Err(e) => return Some(failed(indexer, None, Vec::new(), torznab::doc_error("caps document", e))),
    };
    let plan = match plan(&caps, input) {
        Ok(plan) => plan,
        Err(why) => return Some(failed(indexer, None, Vec::new(), why)),
    };
    let searched_by = plan.narrowed_by();
    let parsed = torznab::get(indexer, &plan.query())
        .and_then(|body| feed::parse(&body).map_err(|e| IndexerError::Failed(torznab::doc_error("feed", e))));
    let items = match parsed {
        Ok(items) => items,
        Err(IndexerError::NotConfigured) => return None,
        Err(IndexerError::Failed(why)) => return Some(failed(indexer, Some(plan.function), searched_by, why)),
    };
    let releases: Vec<Release> = items.into_iter().map(|item| release::from_item(item, indexer)).collect();
    Some(IndexerResult {
        report: IndexerReport {
            indexer: indexer.to_string(),
            function: Some(plan.function.to_string()),
            searched_by,
            results: releases.len(),
            error: None,
        },
        releases,
    })
}

/// Reads one RSS feed; `None` when the operator did not configure it.
fn read_feed(service: &str) -> Option<IndexerResult> {
    let items = match rss::read(service) {
        Ok(items) => items,
        Err(IndexerError::NotConfigured) => return None,
        Err(IndexerError::Failed(why)) => return Some(failed(service, Some("rss"), Vec::new(), why)),
    };
    let releases: Vec<Release> = items.into_iter().map(|item| release::from_item(item, service)).collect();
    let report = IndexerReport {
        indexer: service.to_string(),
        function: Some("rss".into()),
        searched_by: Vec::new(),
        results: releases.len(),
        error: None,
    };
    Some(IndexerResult { report, releases })
}

/// Runs the search described by a validated `input`.
pub fn run(input: &SearchInput) -> Result<SearchOutput, Failure> {
    let mut reports = Vec::new();
    let mut found = Vec::new();
    let feeds = input.wanted_feeds().into_iter().map(read_feed);
    let searched = input.wanted_indexers().into_iter().map(|indexer| search_indexer(indexer, input));
    for result in searched.chain(feeds).flatten() {
        reports.push(result.report);
        found.extend(result.releases);
    }
    if reports.is_empty() {
        let names = input.wanted_indexers().into_iter().chain(input.wanted_feeds()).collect::<Vec<_>>();
        let names = names.iter().map(|n| format!("[services.{n}]")).collect::<Vec<_>>().join(", ");
        let what = if input.recent { "Torznab indexer or RSS feed" } else { "Torznab indexer" };
        return Err(Failure::Unavailable(format!("no {what} is configured; the operator must add {names}")));
    }
    if reports.iter().all(|r| r.error.is_some()) {
        let reasons: Vec<String> =
            reports.iter().map(|r| format!("{}: {}", r.indexer, r.error.as_deref().unwrap_or_default())).collect();
        return Err(Failure::Unavailable(format!("every indexer failed — {}", reasons.join("; "))));
    }
    let mut releases = merge::merge(found);
    let total = releases.len();
    releases.truncate(usize::from(input.limit.unwrap_or(DEFAULT_LIMIT)));
    Ok(SearchOutput { releases, total, indexers: reports })
}
