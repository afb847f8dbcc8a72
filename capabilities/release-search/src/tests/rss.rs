//! RSS feeds through the mock host: a tracker's own feed read for
//! `recent` beside the Torznab indexers, its setting's path and
//! parameters sent, its key never in the component's hands.

use capstan_sdk::Failure;
use capstan_sdk::testing::MockHost;
use serde_json::json;

use super::{EMPTY_FEED, FULL_CAPS, call, indexer, param, xml};

/// A tracker's feed as private trackers write it: plain RSS 2.0, the
/// `.torrent` link with the passkey, the hash and seeds in ezRSS elements.
const TRACKER_FEED: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:torrent="http://xmlns.ezrss.it/0.1/">
<channel><title>Tracker RSS</title>
<item>
  <title>Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX</title>
  <link>https://tracker.example/download.php?id=41&amp;passkey=0123456789abcdef</link>
  <guid>https://tracker.example/details.php?id=41</guid>
  <pubDate>Sat, 02 Mar 2024 09:00:00 +0000</pubDate>
  <enclosure url="https://tracker.example/download.php?id=41&amp;passkey=0123456789abcdef" length="16106127360" type="application/x-bittorrent"/>
  <torrent:infoHash>ABCDEF0123456789ABCDEF0123456789ABCDEF01</torrent:infoHash>
  <torrent:seeds>31</torrent:seeds>
</item>
</channel></rss>"#;

#[test]
fn a_trackers_feed_is_read_for_recent_with_its_path_and_never_its_key() {
    MockHost::new("release.search")
        .with_service("torznab", indexer(FULL_CAPS, EMPTY_FEED))
        .with_service("rss", |req| {
            assert_eq!(req.path, "/rss.php");
            assert_eq!(req.query, [("cat".to_string(), "5 6".to_string()), ("uid".to_string(), "12".to_string())]);
            xml(200, TRACKER_FEED)
        })
        .with_setting("rss_path", "/rss.php?cat=5+6&uid=12")
        .install();
    let found = call(json!({"recent": true})).unwrap();
    let release = &found["releases"][0];
    assert_eq!(release["infohash"], "abcdef0123456789abcdef0123456789abcdef01", "{release}");
    assert_eq!((release["seeders"].as_u64(), release["size_bytes"].as_u64()), (Some(31), Some(16106127360)));
    assert_eq!(release["indexers"], json!(["rss"]));
    // The key in the feed's links is a slot the host fills again.
    let link = release["download_url"].as_str().unwrap();
    assert!(!link.contains("0123456789abcdef") && link.contains("passkey=%5Bredacted%5D"), "{link}");
    let reports = found["indexers"].as_array().unwrap();
    let feed = reports.iter().find(|r| r["indexer"] == "rss").unwrap();
    assert_eq!((feed["function"].as_str(), feed["results"].as_u64()), (Some("rss"), Some(1)), "{feed}");
}

#[test]
fn a_feed_is_read_only_for_recent_and_a_key_in_its_setting_is_refused() {
    // A search never reads a feed, and naming one in a search is refused.
    MockHost::new("release.search")
        .with_service("torznab", indexer(FULL_CAPS, EMPTY_FEED))
        .with_service("rss", |_| panic!("a feed is never searched"))
        .install();
    call(json!({"query": "Dune", "kind": "movie"})).unwrap();
    let refused = call(json!({"query": "Dune", "indexers": ["rss"]})).unwrap_err();
    assert!(matches!(&refused, Failure::InvalidInput(m) if m.contains("RSS feed")), "{refused:?}");

    // A key written into the setting is refused before anything is sent.
    MockHost::new("release.search")
        .with_service("torznab", indexer(FULL_CAPS, EMPTY_FEED))
        .with_service("rss", |_| panic!("nothing may be sent with the key in the setting"))
        .with_setting("rss_path", "/rss.php?PassKey=0123456789abcdef")
        .install();
    let found = call(json!({"recent": true})).unwrap();
    let feed = found["indexers"].as_array().unwrap().iter().find(|r| r["indexer"] == "rss").unwrap().clone();
    assert!(feed["error"].as_str().unwrap().contains("belongs in the service's credential"), "{feed}");
    assert!(!feed.to_string().contains("0123456789abcdef"), "{feed}");

    // A path that is not one is refused with what it must be.
    MockHost::new("release.search")
        .with_service("rss", |_| panic!("nothing may be sent"))
        .with_setting("rss_path", "https://tracker.example/rss.php")
        .install();
    let failed = call(json!({"recent": true})).unwrap_err();
    assert!(matches!(&failed, Failure::Unavailable(m) if m.contains("starting with /")), "{failed:?}");
}

#[test]
fn with_only_a_feed_recent_reads_it_and_a_search_names_what_to_add() {
    MockHost::new("release.search")
        .with_service("rss", |req| {
            assert_eq!((req.path.as_str(), param(req, "t")), ("/", None));
            xml(200, TRACKER_FEED)
        })
        .install();
    assert_eq!(call(json!({"recent": true})).unwrap()["total"], 1);
    let none = call(json!({"query": "Dune"})).unwrap_err();
    assert!(matches!(&none, Failure::Unavailable(m) if m.contains("no Torznab indexer")), "{none:?}");
}
