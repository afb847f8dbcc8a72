//! Which client `connect` picks, and a tag filter over Transmission's list.

use serde_json::json;

use super::*;
use crate::host::{Request, Response};
use crate::testing::{Class, MockHost};

const HASH: &str = "0123456789abcdef0123456789abcdef01234567";

fn transmission(req: &Request) -> Result<Response, HostError> {
    let has_session = req.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("x-transmission-session-id"));
    if !has_session {
        return Ok(Response {
            status: 409,
            headers: vec![("X-Transmission-Session-Id".into(), "s1".into())],
            body: Vec::new(),
        });
    }
    let call: serde_json::Value = serde_json::from_slice(req.body.as_deref().unwrap()).unwrap();
    let arguments = match call["method"].as_str() {
        Some("torrent-get") => json!({"torrents": [
            {"hashString": HASH, "name": "Dune", "status": 6, "percentDone": 1.0, "labels": ["plan:p1", "movies"]},
            {"hashString": "f".repeat(40), "name": "Other", "status": 6, "percentDone": 1.0, "labels": []},
        ]}),
        _ => json!({"version": "3.00 (bb6b5a062e)"}),
    };
    let body = json!({"result": "success", "arguments": arguments}).to_string().into_bytes();
    Ok(Response { status: 200, headers: Vec::new(), body })
}

fn qbittorrent(_: &Request) -> Result<Response, HostError> {
    Ok(Response { status: 200, headers: Vec::new(), body: b"2.11.2".to_vec() })
}

/// A read-granted mock whose Transmission classes its reads as the host's
/// table for it does.
fn reading() -> MockHost {
    MockHost::new("download.status").with_grant(Class::Read).with_read_operation(
        "transmission",
        "POST",
        "/transmission/rpc",
        &["torrent-get", "session-get"],
    )
}

#[test]
fn the_client_set_up_is_the_one_connected() {
    reading().with_service("transmission", transmission).install();
    let client = DownloadClient::connect().unwrap();
    assert_eq!(client.name(), "Transmission");
    let filter = TorrentFilter { tag: Some("plan:p1".into()), ..TorrentFilter::default() };
    let tagged = client.torrents(&filter).unwrap();
    assert_eq!(tagged.iter().map(|t| t.hash.as_str()).collect::<Vec<_>>(), [HASH]);

    reading().with_service("transmission", transmission).with_service("qbittorrent", qbittorrent).install();
    assert_eq!(DownloadClient::connect().unwrap().name(), "qBittorrent", "qBittorrent when both are");
    reading()
        .with_setting("download_client", "transmission")
        .with_service("transmission", transmission)
        .with_service("qbittorrent", qbittorrent)
        .install();
    assert_eq!(DownloadClient::connect().unwrap().name(), "Transmission", "unless the setting names it");

    reading().install();
    let Err(HostError::NotFound(m)) = DownloadClient::connect() else { panic!() };
    assert!(m.contains("qBittorrent or Transmission"), "{m}");
}
