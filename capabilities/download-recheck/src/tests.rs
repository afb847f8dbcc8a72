//! `download.recheck` against the mock host: it rechecks and resumes only
//! the recorded torrent, leaves a torrent mid-check alone, never starts one
//! a person paused, refuses one with nothing to repair, and says clearly
//! when the download or the torrent is gone.

use capstan_sdk::HostError;
use capstan_sdk::contract::records::DownloadTask;
use capstan_sdk::contract::status::DownloadStatus;
use capstan_sdk::host::Response;
use capstan_sdk::testing::{Called, MockHost, descriptor, invoke, records};
use serde_json::{Value, json};

use crate::DownloadRecheck;

const HASH: &str = "89abcdef0123456789abcdef0123456789abcdef";

fn ok(body: impl Into<Vec<u8>>) -> Response {
    Response { status: 200, headers: Vec::new(), body: body.into() }
}

/// A qBittorrent holding one torrent in `state` (or none) and the download
/// task `dl-1` pointing at it.
fn install(state: Option<&'static str>) {
    install_recorded(state, DownloadStatus::Missing, 0.25)
}

/// As [`install`], with the task recorded in `recorded` and the torrent at `progress`.
fn install_recorded(state: Option<&'static str>, recorded: DownloadStatus, progress: f64) {
    MockHost::new("download.recheck")
        .with_domain(move |iface, name, arg| match (iface, name, arg["id"].as_str()) {
            ("library", "download.get", Some("dl-1")) => {
                Ok(json!(DownloadTask { status: recorded, ..records::download("dl-1", "p1", HASH) }))
            }
            (_, _, id) => Err(HostError::NotFound(format!("no download task {}", id.unwrap_or("?")))),
        })
        .with_service("qbittorrent", move |req| match req.path.as_str() {
            "/api/v2/app/webapiVersion" => Ok(ok("2.8.19")),
            "/api/v2/torrents/info" => {
                let list: Vec<Value> =
                    state.into_iter().map(|s| json!({"hash": HASH, "state": s, "progress": progress})).collect();
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
fn a_paused_torrent_is_rechecked_but_never_started() {
    install(Some("stoppedDL"));
    let Called::Succeeded(out) = invoke::<DownloadRecheck>(json!({"downloadTaskId": "dl-1"})).unwrap() else {
        panic!()
    };
    assert_eq!((out["rechecked"].as_bool(), out["resumed"].as_bool()), (Some(true), Some(false)));
    assert_eq!(posts(), [("/api/v2/torrents/recheck".to_string(), format!("hashes={HASH}"))]);

    install(Some("stoppedDL"));
    let failure = invoke::<DownloadRecheck>(json!({"downloadTaskId": "dl-1", "action": "resume"})).unwrap_err();
    assert!(failure.to_string().contains("is paused"), "{failure}");
    assert!(posts().is_empty(), "a paused torrent is its owner's to start");
}

#[test]
fn resume_starts_an_errored_or_stalled_torrent_only() {
    for state in ["error", "stalledDL"] {
        install(Some(state));
        let Called::Succeeded(out) =
            invoke::<DownloadRecheck>(json!({"downloadTaskId": "dl-1", "action": "resume"})).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (out["action"].as_str(), out["rechecked"].as_bool(), out["resumed"].as_bool()),
            (Some("resume"), Some(false), Some(true))
        );
        assert_eq!(posts(), [("/api/v2/torrents/resume".to_string(), format!("hashes={HASH}"))], "{state}");
    }
    install(Some("error"));
    assert!(invoke::<DownloadRecheck>(json!({"downloadTaskId": "dl-1", "action": "delete"})).is_err());
    assert!(posts().is_empty());
}

#[test]
fn a_healthy_or_removed_download_has_nothing_to_repair() {
    for (state, progress) in [("downloading", 0.5), ("uploading", 1.0), ("queuedDL", 0.0)] {
        install_recorded(Some(state), DownloadStatus::Downloading, progress);
        let failure = invoke::<DownloadRecheck>(json!({"downloadTaskId": "dl-1"})).unwrap_err();
        assert!(failure.to_string().contains("nothing to repair"), "{state}: {failure}");
        assert!(posts().is_empty(), "{state}");
    }
    install_recorded(Some("missingFiles"), DownloadStatus::Removed, 0.0);
    let failure = invoke::<DownloadRecheck>(json!({"downloadTaskId": "dl-1"})).unwrap_err();
    assert!(failure.to_string().contains("was removed"), "{failure}");
    assert!(posts().is_empty());
}

#[test]
fn an_uncertain_repair_is_never_sent_again() {
    let replay = descriptor::<DownloadRecheck>().replay;
    assert!(matches!(replay, capstan_sdk::bindings::capstan::capability::types::ReplayPolicy::Never));
}

#[test]
fn an_execute_capability_of_the_download_clients_alone() {
    let d = descriptor::<DownloadRecheck>();
    assert_eq!(d.services, ["qbittorrent", "transmission"]);
    assert!(d.aliases.iter().any(|a| a == "重新校验"));
}
