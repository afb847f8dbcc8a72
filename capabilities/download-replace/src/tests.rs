//! `download.replace` against the mock host: it removes only the recorded
//! torrent, keeping its data, before the store blocks the release; it
//! refuses a download whose files are in the library, touches no client
//! for one already removed, and changes nothing when qBittorrent cannot be
//! reached.

use std::cell::RefCell;
use std::rc::Rc;

use capstan_sdk::contract::ops::transitions::DownloadReplaced;
use capstan_sdk::contract::records::{BlockedRelease, DownloadTask};
use capstan_sdk::contract::status::DownloadStatus;
use capstan_sdk::host::Response;
use capstan_sdk::testing::{Called, MockHost, descriptor, invoke, records};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::DownloadReplaceCapability;

const HASH: &str = "89abcdef0123456789abcdef0123456789abcdef";

fn ok(body: impl Into<Vec<u8>>) -> Response {
    Response { status: 200, headers: Vec::new(), body: body.into() }
}

/// The transitions asked of the store.
type Asked = Rc<RefCell<Vec<Value>>>;

fn install(recorded: DownloadStatus, client_up: bool) -> Asked {
    let asked: Asked = Rc::default();
    let seen = asked.clone();
    MockHost::new("download.replace")
        .with_domain(move |iface, name, arg| match (iface, name) {
            ("library", "download.get") if arg["id"] == "dl-1" => {
                Ok(json!(DownloadTask { status: recorded, ..records::download("dl-1", "p1", HASH) }))
            }
            ("records", "download.replace") => {
                seen.borrow_mut().push(arg.clone());
                let blocked = BlockedRelease {
                    release_id: "rel-1".into(),
                    title: "Dune.Part.Two.2024.2160p.WEB-DL-BAD".into(),
                    entity_id: Some("ent-1".into()),
                    reason: arg["reason"].as_str().unwrap().into(),
                    blocked_by: "admin:alice".into(),
                    created_at: 1,
                };
                let download =
                    DownloadTask { status: DownloadStatus::Removed, ..records::download("dl-1", "p1", HASH) };
                Ok(json!(DownloadReplaced { download, blocked }))
            }
            _ => Err(HostError::NotFound(format!("{iface} {name}"))),
        })
        .with_service("qbittorrent", move |req| match (client_up, req.path.as_str()) {
            (false, _) => Err(HostError::Unavailable("connection refused".into())),
            (true, "/api/v2/app/webapiVersion") => Ok(ok("2.11.2")),
            (true, _) => Ok(ok("")),
        })
        .install();
    asked
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
fn the_torrent_goes_with_its_data_kept_and_the_release_is_blocked() {
    let asked = install(DownloadStatus::Failed, true);
    let input = json!({"downloadTaskId": "dl-1", "reason": "the files are fake"});
    let Called::Succeeded(out) = invoke::<DownloadReplaceCapability>(input).unwrap() else { panic!() };
    assert_eq!(out["status"], "removed");
    assert_eq!((out["blockedReleaseId"].as_str(), out["reason"].as_str()), (Some("rel-1"), Some("the files are fake")));
    assert_eq!(posts(), [("/api/v2/torrents/delete".to_string(), format!("hashes={HASH}&deleteFiles=false"))]);
    assert_eq!(*asked.borrow(), [json!({"id": "dl-1", "reason": "the files are fake"})]);
}

#[test]
fn a_download_in_the_library_is_refused_and_nothing_is_touched() {
    for status in [DownloadStatus::Importing, DownloadStatus::Imported] {
        let asked = install(status, true);
        let failure = invoke::<DownloadReplaceCapability>(json!({"downloadTaskId": "dl-1"})).unwrap_err();
        assert!(matches!(failure, Failure::Conflict(_)), "{failure}");
        assert!(posts().is_empty() && asked.borrow().is_empty());
    }
}

#[test]
fn a_removed_download_is_recorded_without_the_client() {
    let asked = install(DownloadStatus::Removed, false);
    let Called::Succeeded(out) = invoke::<DownloadReplaceCapability>(json!({"downloadTaskId": "dl-1"})).unwrap() else {
        panic!()
    };
    assert_eq!(out["reason"], "given up for another release");
    assert!(posts().is_empty());
    assert_eq!(asked.borrow().len(), 1);
}

#[test]
fn an_unreachable_client_changes_nothing() {
    let asked = install(DownloadStatus::Stalled, false);
    let failure = invoke::<DownloadReplaceCapability>(json!({"downloadTaskId": "dl-1"})).unwrap_err();
    assert!(matches!(failure, Failure::Unavailable(_)), "{failure}");
    assert!(asked.borrow().is_empty(), "the release is not blocked while the torrent may still run");
}

#[test]
fn the_descriptor_says_it_is_never_an_automatic_repair() {
    let d = descriptor::<DownloadReplaceCapability>();
    assert_eq!(d.id, "download.replace");
    assert!(!d.tags.iter().any(|t| t.starts_with("policy.")), "no policy grant covers it by a tag: {:?}", d.tags);
    assert!(d.aliases.iter().any(|a| a == "find another release"));
}
