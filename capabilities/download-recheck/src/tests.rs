//! `download.recheck` against the mock host: it rechecks and resumes only
//! the recorded torrent, leaves a torrent mid-check alone, and says clearly
//! when the download or the torrent is gone.

use capstan_sdk::HostError;
use capstan_sdk::host::Response;
use capstan_sdk::testing::{Called, MockHost, descriptor, invoke};
use serde_json::{Value, json};

use crate::DownloadRecheck;

const HASH: &str = "89abcdef0123456789abcdef0123456789abcdef";

fn ok(body: impl Into<Vec<u8>>) -> Response {
    Response { status: 200, headers: Vec::new(), body: body.into() }
}

/// A qBittorrent holding one torrent in `state` (or none) and the download
/// task `dl-1` pointing at it.
fn install(state: Option<&'static str>) {
    MockHost::new("download.recheck")
        .with_domain(|iface, name, arg| match (iface, name, arg["id"].as_str()) {
            ("library", "download.get", Some("dl-1")) => {
                Ok(json!({"id": "dl-1", "planId": "p1", "clientHash": HASH, "status": "missing", "progress": 0.0}))
            }
            (_, _, id) => Err(HostError::NotFound(format!("no download task {}", id.unwrap_or("?")))),
        })
        .with_service("qbittorrent", move |req| match req.path.as_str() {
            "/api/v2/app/webapiVersion" => Ok(ok("2.8.19")),
            "/api/v2/torrents/info" => {
                let list: Vec<Value> =
                    state.into_iter().map(|s| json!({"hash": HASH, "state": s, "progress": 0.25})).collect();
                Ok(ok(serde_json::to_vec(&list).unwrap()))
            }
            _ => Ok(ok("")),
        })
        .install();
}

fn posts() -> Vec<(String, String)> {
    MockHost::take()
        .unwrap()
        .requests
        .into_iter()
        .filter(|r| r.method == "POST")
        .map(|r| (r.path, String::from_utf8(r.body.unwrap_or_default()).unwrap()))
        .collect()
}

#[test]
fn rechecks_and_resumes_only_the_recorded_torrent() {
    install(Some("missingFiles"));
    let Called::Succeeded(out) = invoke::<DownloadRecheck>(json!({"downloadTaskId": "dl-1"})).unwrap() else {
        panic!()
    };
    assert_eq!((out["rechecked"].as_bool(), out["clientHash"].as_str()), (Some(true), Some(HASH)));
    assert_eq!((out["status"].as_str(), out["clientState"].as_str()), (Some("missing"), Some("missingFiles")));
    let hashes = format!("hashes={HASH}");
    assert_eq!(
        posts(),
        [("/api/v2/torrents/recheck".to_string(), hashes.clone()), ("/api/v2/torrents/resume".to_string(), hashes)],
        "nothing deleted, moved or re-tagged"
    );
}

#[test]
fn a_torrent_already_checking_is_left_alone() {
    install(Some("checkingResumeData"));
    let Called::Succeeded(out) = invoke::<DownloadRecheck>(json!({"downloadTaskId": "dl-1"})).unwrap() else {
        panic!()
    };
    assert_eq!((out["rechecked"].as_bool(), out["status"].as_str()), (Some(false), Some("queued")));
    assert!(posts().is_empty());
}

#[test]
fn an_unknown_download_or_a_removed_torrent_is_not_found() {
    install(Some("stalledDL"));
    let failure = invoke::<DownloadRecheck>(json!({"downloadTaskId": "dl-9"})).unwrap_err();
    assert_eq!(failure.to_string(), "not found: no download task dl-9");

    install(None);
    let failure = invoke::<DownloadRecheck>(json!({"downloadTaskId": "dl-1"})).unwrap_err();
    assert!(failure.to_string().contains("no longer holds torrent"), "{failure}");
    assert!(posts().is_empty());
}

#[test]
fn an_execute_capability_of_the_qbittorrent_service_alone() {
    let d = descriptor::<DownloadRecheck>();
    assert_eq!(d.services, ["qbittorrent"]);
    assert!(d.aliases.iter().any(|a| a == "重新校验"));
}
