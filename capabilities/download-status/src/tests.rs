//! `download.status` against the mock host: states map to Capstan's
//! statuses, a torrent qBittorrent dropped is missing, the default reads
//! every active download, and nothing is ever written.

use capstan_sdk::HostError;
use capstan_sdk::contract::ops::queries::DownloadsListed;
use capstan_sdk::contract::records::DownloadTask;
use capstan_sdk::contract::status::DownloadStatus;
use capstan_sdk::host::Response;
use capstan_sdk::testing::{Called, Class, MockHost, invoke, records};
use serde_json::{Value, json};

use crate::DownloadStatusCapability;

fn hash(n: u8) -> String {
    format!("{n:x}").repeat(40)
}

fn ok(body: impl Into<Vec<u8>>) -> Response {
    Response { status: 200, headers: Vec::new(), body: body.into() }
}

fn task(n: u8, status: DownloadStatus) -> Value {
    json!(DownloadTask { status, progress: 0.5, ..records::download(&format!("dl-{n}"), &format!("p{n}"), &hash(n)) })
}

/// qBittorrent holds torrents 1 (seeding, done) and 2 (downloading); task 3's
/// torrent is gone. The grant is read: any write would be denied.
fn install() {
    MockHost::new("download.status")
        .with_grant(Class::Read)
        .with_domain(|iface, name, arg| match (iface, name) {
            ("library", "download.get") => match arg["id"].as_str() {
                Some("dl-1") => Ok(task(1, DownloadStatus::Downloading)),
                Some("dl-3") => Ok(task(3, DownloadStatus::Downloading)),
                other => Err(HostError::NotFound(format!("no download task {}", other.unwrap_or("?")))),
            },
            ("library", "downloads.list") => {
                let listed: DownloadsListed = serde_json::from_value(arg.clone()).unwrap();
                assert_eq!(listed.limit, crate::MAX_TASKS as i64, "as many as one call reads");
                Ok(match listed.status {
                    Some(DownloadStatus::Downloading) => json!([task(2, DownloadStatus::Downloading)]),
                    Some(DownloadStatus::Completed) => json!([task(1, DownloadStatus::Completed)]),
                    Some(_) => json!([]),
                    None => panic!("the listing names a status"),
                })
            }
            other => panic!("unexpected domain call {other:?}"),
        })
        .with_service("qbittorrent", |req| match req.path.as_str() {
            "/api/v2/app/webapiVersion" => Ok(ok("2.8.19")),
            "/api/v2/torrents/info" => Ok(ok(json!([
                {"hash": hash(1), "state": "stalledUP", "progress": 1.0, "content_path": "/downloads/Dune.mkv",
                 "dlspeed": 0, "num_seeds": 3, "eta": 8640000}, // qBittorrent's "no estimate"
                {"hash": hash(2), "state": "downloading", "progress": 0.42, "content_path": "/downloads/Arrival"},
            ])
            .to_string())),
            other => panic!("unexpected qBittorrent call {other}"),
        })
        .install();
}

fn read(input: Value) -> Value {
    match invoke::<DownloadStatusCapability>(input).unwrap() {
        Called::Succeeded(out) => out["downloads"].clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn reports_qbittorrent_s_view_and_a_dropped_torrent_as_missing() {
    install();
    let downloads = read(json!({"downloadTaskIds": ["dl-1", "dl-3"]}));
    assert_eq!(
        downloads,
        json!([
            {"downloadTaskId": "dl-1", "clientHash": hash(1), "status": "completed", "progress": 1.0,
             "contentPath": "/downloads/Dune.mkv", "clientState": "stalledUP",
             "downloadSpeed": 0, "seeds": 3, "etaSeconds": null},
            {"downloadTaskId": "dl-3", "clientHash": hash(3), "status": "missing", "progress": 0.5,
             "contentPath": null, "clientState": null, "downloadSpeed": null, "seeds": null, "etaSeconds": null},
        ])
    );
    let sent = MockHost::take().unwrap().requests;
    assert!(sent.iter().all(|r| r.method == "GET"), "reading writes nothing");
    let info = sent.iter().find(|r| r.path == "/api/v2/torrents/info").unwrap();
    assert_eq!(info.query, [("hashes".to_string(), format!("{}|{}", hash(1), hash(3)))]);
}

#[test]
fn without_ids_every_active_download_is_read() {
    install();
    let downloads = read(json!({}));
    let seen: Vec<(&str, &str)> = downloads
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["downloadTaskId"].as_str().unwrap(), d["status"].as_str().unwrap()))
        .collect();
    assert_eq!(seen, [("dl-2", "downloading"), ("dl-1", "completed")]);
}

#[test]
fn unknown_ids_and_an_empty_list_are_refused() {
    install();
    let failure = invoke::<DownloadStatusCapability>(json!({"downloadTaskIds": ["dl-1", "dl-9"]})).unwrap_err();
    assert_eq!(failure.to_string(), "not found: no download task dl-9");
    let failure = invoke::<DownloadStatusCapability>(json!({"downloadTaskIds": []})).unwrap_err();
    assert!(failure.to_string().starts_with("invalid input"), "{failure}");
}
