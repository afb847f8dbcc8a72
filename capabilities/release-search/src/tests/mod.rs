//! Native tests through the SDK's mock host: real-shaped caps and feeds in,
//! the JSON a caller would see out; caps-aware planning, merging across
//! indexers, and every way an indexer can fail.

mod fixtures;
mod rss;

use capstan_sdk::host::{Request, Response};
use capstan_sdk::testing::{Called, MockHost, descriptor, invoke};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::ReleaseSearch;
use crate::input::SearchInput;
use crate::plan::plan;
use crate::torznab::{caps, feed};
use fixtures::*;

type Handler = Box<dyn FnMut(&Request) -> Result<Response, HostError>>;

fn xml(status: u16, body: &str) -> Result<Response, HostError> {
    Ok(Response { status, headers: vec![("content-type".into(), "application/xml".into())], body: body.into() })
}

fn param(req: &Request, name: &str) -> Option<String> {
    req.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

/// An indexer answering `caps` to `t=caps` and `feed` to every search.
fn indexer(caps: &'static str, feed: &'static str) -> impl FnMut(&Request) -> Result<Response, HostError> {
    move |req| if param(req, "t").as_deref() == Some("caps") { xml(200, caps) } else { xml(200, feed) }
}

fn call(input: Value) -> Result<Value, Failure> {
    match invoke::<ReleaseSearch>(input)? {
        Called::Succeeded(v) => Ok(v),
        Called::Pending(v) => panic!("a search is never pending: {v}"),
    }
}

fn input(value: Value) -> SearchInput {
    serde_json::from_value(value).unwrap()
}

#[test]
fn recent_reads_the_feed_and_takes_nothing_that_narrows_it() {
    let full = caps::parse(FULL_CAPS).unwrap();
    let feed = plan(&full, &input(json!({"recent": true}))).unwrap();
    assert_eq!(feed.query(), [("t", "search".to_string()), ("extended", "1".to_string())]);
    let series = plan(&full, &input(json!({"recent": true, "kind": "tv"}))).unwrap();
    assert_eq!(series.query()[1], ("cat", "5000".to_string()));
    for narrowed in [json!({"recent": true, "query": "Dune"}), json!({"recent": true, "kind": "tv", "season": 1})] {
        assert!(input(narrowed.clone()).validate().is_err(), "{narrowed}");
    }
}

#[test]
fn caps_say_which_parameters_each_function_takes() {
    let full = caps::parse(FULL_CAPS).unwrap();
    assert!(full.movie_search.supports("imdbid") && full.movie_search.supports("tmdbid"));
    assert!(full.tv_search.supports("ep") && !full.tv_search.supports("tmdbid"));
    let tiny = caps::parse(TEXT_ONLY_CAPS).unwrap();
    assert!(!tiny.movie_search.supports("q"), "an unavailable function supports nothing");
    assert!(tiny.search.supports("q"));
}

#[test]
fn feed_items_read_hashes_peers_ids_and_dates_from_any_prefix() {
    let items = feed::parse(DUNE_FEED).unwrap();
    assert_eq!(items.len(), 3);
    let releases: Vec<_> = items.into_iter().map(|i| crate::release::from_item(i, "torznab")).collect();

    let uhd = &releases[0];
    assert_eq!(uhd.infohash.as_deref(), Some(FIRST_HASH));
    assert_eq!((uhd.seeders, uhd.peers, uhd.leechers), (Some(250), Some(270), Some(20)));
    assert_eq!(uhd.size_bytes, Some(21_474_836_480));
    assert_eq!(uhd.categories, [2000, 2045]);
    assert_eq!(uhd.imdb_id.as_deref(), Some("tt15239678"));
    assert_eq!(uhd.tmdb_id, Some(693134));
    assert_eq!(uhd.published.as_deref(), Some("2024-03-02T09:00:00Z"));
    assert_eq!(uhd.download_volume_factor, Some(0.0));
    // `&amp;` is resolved, and the indexer's own key is replaced by a slot
    // the host fills when it fetches the link as that indexer.
    assert_eq!(
        uhd.download_url.as_deref(),
        Some("https://jackett.example/dl/alpha/?jackett_apikey=%5Bredacted%5D&path=1001")
    );
    assert_eq!(uhd.details_url.as_deref(), Some("https://alpha.example/torrents/1001"));

    let bluray = &releases[1];
    assert_eq!(bluray.title, "Dune Part Two 2024 1080p BluRay x264 & more");
    assert_eq!(bluray.infohash.as_deref(), Some(SECOND_HASH), "base32 btih from the magnet");
    assert!(bluray.magnet_url.as_deref().unwrap().starts_with("magnet:?xt=urn:btih:"));
    assert_eq!(bluray.download_url, None);
    assert_eq!((bluray.seeders, bluray.leechers, bluray.peers), (Some(40), Some(5), Some(45)));
    assert_eq!(bluray.imdb_id.as_deref(), Some("tt15239678"));

    let cam = &releases[2];
    assert_eq!(cam.infohash, None);
    assert_eq!(cam.size_bytes, None, "a zero length is no size");
    assert_eq!(cam.published.as_deref(), Some("not a date"));
}

#[test]
fn typed_search_by_id_when_caps_allow_it_text_search_otherwise() {
    let full = caps::parse(FULL_CAPS).unwrap();
    let tiny = caps::parse(TEXT_ONLY_CAPS).unwrap();
    let movie = input(json!({"kind": "movie", "query": "Dune Part Two", "imdb_id": "tt15239678", "tmdb_id": 693134}));

    let typed = plan(&full, &movie).unwrap();
    assert_eq!(typed.function, "movie");
    assert_eq!(
        typed.query(),
        [
            ("t", "movie".to_string()),
            ("imdbid", "15239678".into()),
            ("tmdbid", "693134".into()),
            ("cat", "2000".into()),
            ("extended", "1".into())
        ]
    );

    let text = plan(&tiny, &movie).unwrap();
    assert_eq!(text.function, "search");
    assert_eq!(text.narrowed_by(), ["q"]);
    assert_eq!(text.params[0], ("q", "Dune Part Two".to_string()));

    let episode =
        input(json!({"query": "Shogun", "imdb_id": "tt2788316", "season": 1, "episode": 2, "categories": [5040]}));
    let typed = plan(&full, &episode).unwrap();
    assert_eq!(typed.function, "tvsearch");
    assert_eq!(typed.narrowed_by(), ["imdbid", "season", "ep"]);
    assert!(typed.params.contains(&("cat", "5040".into())));
    let text = plan(&tiny, &episode).unwrap();
    assert_eq!(text.params[0], ("q", "Shogun S01E02".to_string()));

    let id_only = input(json!({"kind": "movie", "tmdb_id": 693134}));
    let err = plan(&tiny, &id_only).unwrap_err();
    assert!(err.contains("without a query"), "{err}");
}

#[test]
fn overlapping_indexers_merge_by_infohash_keeping_the_best_seeded_listing() {
    MockHost::new("release.search")
        .with_service("torznab", indexer(FULL_CAPS, DUNE_FEED))
        .with_service("torznab-2", indexer(TEXT_ONLY_CAPS, DUNE_FEED_BETA))
        .install();
    let out = call(json!({"query": "Dune Part Two", "kind": "movie", "imdb_id": "tt15239678"})).unwrap();
    let releases = out["releases"].as_array().unwrap();
    assert_eq!(out["total"], 4, "five listings, one duplicate");
    assert_eq!(releases.len(), 4);
    let first = &releases[0];
    assert_eq!(first["infohash"], FIRST_HASH);
    assert_eq!(first["seeders"], 250, "the better-seeded listing wins");
    assert_eq!(first["indexers"], json!(["torznab", "torznab-2"]));
    assert!(first["magnet_url"].as_str().unwrap().contains("tracker.beta.example"), "a field only beta had is kept");
    let seeders: Vec<u64> = releases.iter().map(|r| r["seeders"].as_u64().unwrap()).collect();
    assert_eq!(seeders, [250, 40, 12, 3]);

    assert_eq!(
        out["indexers"][0],
        json!({"indexer": "torznab", "function": "movie", "searched_by": ["imdbid"], "results": 3})
    );
    assert_eq!(
        out["indexers"][1],
        json!({"indexer": "torznab-2", "function": "search", "searched_by": ["q"], "results": 2})
    );

    let sent = MockHost::take().unwrap().requests;
    let services: Vec<&str> = sent.iter().map(|r| r.service.as_str()).collect();
    assert_eq!(
        services,
        ["torznab", "torznab", "torznab-2", "torznab-2", "torznab-3"],
        "torznab-3 is tried and absent"
    );
    assert!(sent.iter().all(|r| r.path == "/api" && r.method == "GET"));
}

#[test]
fn one_failing_indexer_is_reported_beside_the_others_results() {
    let refused = r#"<?xml version="1.0" encoding="UTF-8"?><error code="100" description="Invalid API Key" />"#;
    MockHost::new("release.search")
        .with_service("torznab", indexer(FULL_CAPS, DUNE_FEED))
        .with_service("torznab-2", move |_| xml(401, refused))
        .install();
    let out = call(json!({"query": "Dune"})).unwrap();
    assert_eq!(out["releases"].as_array().unwrap().len(), 3);
    let error = out["indexers"][1]["error"].as_str().unwrap();
    assert_eq!(error, "refused the configured API key (error 100: Invalid API Key)");
}

#[test]
fn every_way_an_indexer_fails_has_its_own_message() {
    let cases: [(&str, Handler, &str); 6] = [
        (
            "error document with status 200",
            Box::new(|_| xml(200, r#"<error code="100" description="Incorrect user credentials"/>"#)),
            "refused the configured API key (error 100: Incorrect user credentials)",
        ),
        (
            "rate limit",
            Box::new(|_| {
                Ok(Response { status: 429, headers: vec![("Retry-After".into(), "60".into())], body: vec![] })
            }),
            "rate-limited the search; retry after 60 s",
        ),
        ("server error", Box::new(|_| xml(502, "<html>Bad Gateway</html>")), "failed with status 502"),
        (
            "malformed caps",
            Box::new(|_| xml(200, "<caps><searching>")),
            "answered a caps document that is not valid Torznab XML",
        ),
        (
            "malformed feed",
            Box::new(indexer(FULL_CAPS, "<rss><channel><item><title>x</item></channel></rss>")),
            "answered a feed that is not valid Torznab XML",
        ),
        (
            "unreachable",
            Box::new(|_| Err(HostError::Unavailable("request to service torznab timed out".into()))),
            "could not be reached: request to service torznab timed out",
        ),
    ];
    for (case, handler, expected) in cases {
        MockHost::new("release.search").with_service("torznab", handler).install();
        let Err(Failure::Unavailable(message)) = call(json!({"query": "Dune"})) else { panic!("{case}") };
        assert!(message.starts_with("every indexer failed"), "{case}: {message}");
        assert!(message.contains(&format!("torznab: {expected}")), "{case}: {message}");
    }
}

#[test]
fn no_configured_indexer_is_unavailable_and_names_the_services() {
    MockHost::new("release.search").install();
    let Err(Failure::Unavailable(message)) = call(json!({"query": "Dune"})) else { panic!() };
    assert!(message.contains("[services.torznab]") && message.contains("[services.torznab-3]"), "{message}");
}

#[test]
fn the_indexers_filter_and_limit_are_honoured() {
    MockHost::new("release.search")
        .with_service("torznab", |_| panic!("not asked for"))
        .with_service("torznab-2", indexer(FULL_CAPS, DUNE_FEED))
        .install();
    let out = call(json!({"query": "Dune", "indexers": ["torznab-2"], "limit": 1})).unwrap();
    assert_eq!(out["releases"].as_array().unwrap().len(), 1);
    assert_eq!(out["total"], 3);

    MockHost::new("release.search").with_service("torznab", indexer(FULL_CAPS, EMPTY_FEED)).install();
    let out = call(json!({"query": "Nothing"})).unwrap();
    assert_eq!(out["releases"], json!([]), "no results is not a failure");
}

#[test]
fn bad_input_is_refused_before_any_request() {
    for bad in [
        json!({}),
        json!({"query": "  "}),
        json!({"imdb_id": "15239678"}),
        json!({"imdb_id": "tt12"}),
        json!({"query": "Dune", "kind": "movie", "season": 1}),
        json!({"query": "Shogun", "episode": 2}),
        json!({"tmdb_id": 693134}),
        json!({"imdb_id": "tt15239678"}),
        json!({"query": "Dune", "limit": 0}),
        json!({"query": "Dune", "indexers": ["jackett"]}),
        json!({"query": "Dune", "kind": "music"}),
        json!({"query": "Dune", "sort": "size"}),
    ] {
        MockHost::new("release.search").with_service("torznab", |_| panic!("nothing may be sent")).install();
        let err = call(bad.clone()).unwrap_err();
        assert!(matches!(err, Failure::InvalidInput(_)), "{bad}: {err:?}");
    }
}

#[test]
fn the_descriptor_names_every_indexer_service_and_chinese_aliases() {
    let d = descriptor::<ReleaseSearch>();
    assert_eq!(d.id, "release.search");
    assert_eq!(d.services, ["torznab", "torznab-2", "torznab-3", "rss", "rss-2", "rss-3"]);
    assert!(d.aliases.iter().any(|a| a == "找种子"));
}
