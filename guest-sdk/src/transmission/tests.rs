//! The client against [`MockHost`]: the session-id handshake, the RPC
//! bodies each operation sends and through which import, how torrents and
//! their status are read, and what is refused before anything is sent.

use std::cell::RefCell;
use std::rc::Rc;

use super::*;
use crate::qbittorrent::DownloadStatus;
use crate::testing::{Class, MockHost};

const HASH: &str = "0123456789abcdef0123456789abcdef01234567";
const SESSION: &str = "sEsSiOn-42";

/// Installs a mock Transmission: 409 with a session id until a request
/// carries it, then `reply` to each call's (method, arguments).
fn serve(class: Class, mut reply: impl FnMut(&str, &Value) -> Value + 'static) -> Rc<RefCell<Vec<Request>>> {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let log = seen.clone();
    MockHost::new("test.transmission")
        .with_grant(class)
        .with_read_operation(SERVICE, "POST", RPC_PATH, &["torrent-get", "session-get"])
        .with_service(SERVICE, move |req| {
            log.borrow_mut().push(req.clone());
            let has_session = req.headers.iter().any(|(k, v)| k.eq_ignore_ascii_case(SESSION_HEADER) && v == SESSION);
            if !has_session {
                return Ok(Response {
                    status: 409,
                    headers: vec![("X-Transmission-Session-Id".into(), SESSION.into())],
                    body: b"<h1>409: Conflict</h1>".to_vec(),
                });
            }
            let call: Value = serde_json::from_slice(req.body.as_deref().unwrap()).unwrap();
            let answer = reply(call["method"].as_str().unwrap(), &call["arguments"]);
            Ok(Response { status: 200, headers: Vec::new(), body: answer.to_string().into_bytes() })
        })
        .install();
    seen
}

fn success(arguments: Value) -> Value {
    json!({"result": "success", "arguments": arguments})
}

fn downloading() -> Value {
    json!({"hashString": HASH.to_uppercase(), "name": "Dune.Part.Two.2024.2160p.mkv", "status": 4, "error": 0,
        "errorString": "", "percentDone": 0.25, "sizeWhenDone": 4000, "totalSize": 4000, "leftUntilDone": 3000,
        "downloadDir": "/downloads/", "labels": ["plan:p1"], "addedDate": 10, "doneDate": 0, "eta": 60,
        "rateDownload": 1000, "rateUpload": 0, "peersSendingToUs": 3, "uploadRatio": 0.0})
}

#[test]
fn the_session_id_is_fetched_once_and_sent_after() {
    let seen = serve(Class::Read, |_, _| success(json!({"torrents": [downloading()]})));
    let client = Client::new();
    let torrent = client.torrent(HASH).unwrap().unwrap();
    assert_eq!((torrent.hash.as_str(), torrent.status()), (HASH, DownloadStatus::Downloading));
    assert_eq!(torrent.content_path, "/downloads/Dune.Part.Two.2024.2160p.mkv");
    assert_eq!(torrent.tags, ["plan:p1"]);
    client.torrents(&[]).unwrap();
    let requests = seen.borrow();
    assert_eq!(requests.len(), 3, "one 409, then each call once");
    let second: Value = serde_json::from_slice(requests[1].body.as_deref().unwrap()).unwrap();
    assert_eq!(second["method"], "torrent-get");
    assert_eq!(second["arguments"]["ids"], json!([HASH]));
    let third: Value = serde_json::from_slice(requests[2].body.as_deref().unwrap()).unwrap();
    assert!(third["arguments"].get("ids").is_none(), "every torrent");
    assert!(requests.iter().all(|r| (r.method.as_str(), r.path.as_str()) == ("POST", RPC_PATH)));
}

#[test]
fn a_torrent_is_added_then_labelled_and_a_duplicate_is_a_conflict() {
    let seen = serve(Class::Execute, |method, args| match method {
        "torrent-add" => success(json!({"torrent-added": {"hashString": HASH, "id": 1, "name": "Dune"}})),
        "torrent-set" => {
            assert_eq!(args["labels"], json!(["plan:p1", "movies"]));
            success(json!({}))
        }
        other => panic!("{other}"),
    });
    let add = AddTorrent {
        save_path: Some("/downloads".into()),
        category: Some("movies".into()),
        tags: vec!["plan:p1".into()],
        ..AddTorrent::file("dune.torrent", b"d4:infod4:name4:Dunee".to_vec())
    };
    assert_eq!(Client::new().add(&add).unwrap(), HASH);
    let bodies: Vec<Value> =
        seen.borrow().iter().skip(1).map(|r| serde_json::from_slice(r.body.as_deref().unwrap()).unwrap()).collect();
    assert_eq!(bodies[0]["arguments"]["metainfo"], "ZDQ6aW5mb2Q0Om5hbWU0OkR1bmVl");
    assert_eq!(bodies[0]["arguments"]["download-dir"], "/downloads");
    assert_eq!(bodies[1]["method"], "torrent-set");

    serve(Class::Execute, |_, _| success(json!({"torrent-duplicate": {"hashString": HASH}})));
    let again = Client::new().add(&AddTorrent::url("magnet:?xt=urn:btih:0123"));
    assert!(matches!(again, Err(HostError::Conflict(_))), "{again:?}");
}

#[test]
fn commands_name_their_torrents_and_removal_keeps_the_data() {
    let seen = serve(Class::Execute, |_, _| success(json!({})));
    let client = Client::new();
    client.recheck(&[HASH]).unwrap();
    client.pause(&[HASH]).unwrap();
    client.resume(&[HASH]).unwrap();
    client.remove_keeping_data(&[HASH]).unwrap();
    let calls: Vec<Value> =
        seen.borrow().iter().skip(1).map(|r| serde_json::from_slice(r.body.as_deref().unwrap()).unwrap()).collect();
    let methods: Vec<&str> = calls.iter().map(|c| c["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["torrent-verify", "torrent-stop", "torrent-start", "torrent-remove"]);
    assert_eq!(calls[3]["arguments"], json!({"ids": [HASH], "delete-local-data": false}));
}

#[test]
fn nothing_is_sent_for_no_torrent_or_a_bad_hash() {
    let seen = serve(Class::Execute, |_, _| success(json!({})));
    let client = Client::new();
    assert!(matches!(client.recheck(&[]), Err(HostError::Invalid(_))), "no ids would mean every torrent");
    assert!(matches!(client.remove_keeping_data(&["all"]), Err(HostError::Invalid(_))));
    assert!(matches!(client.torrent("1,2"), Err(HostError::Invalid(_))));
    assert!(matches!(client.add(&AddTorrent::default()), Err(HostError::Invalid(_))));
    assert!(seen.borrow().is_empty());
}

#[test]
fn transmissions_status_reads_as_the_records_states() {
    let with = |changes: Value| {
        let mut t = downloading();
        t.as_object_mut().unwrap().extend(changes.as_object().unwrap().clone());
        torrent_of(&t).status()
    };
    assert_eq!(with(json!({"status": 6, "percentDone": 1.0})), DownloadStatus::Completed);
    assert_eq!(with(json!({"status": 0, "percentDone": 1.0})), DownloadStatus::Completed);
    assert_eq!(with(json!({"status": 0})), DownloadStatus::Paused);
    assert_eq!(with(json!({"status": 3})), DownloadStatus::Queued);
    assert_eq!(with(json!({"status": 2})), DownloadStatus::Queued, "checking");
    assert_eq!(with(json!({"peersSendingToUs": 0, "rateDownload": 0})), DownloadStatus::Stalled);
    assert_eq!(with(json!({"error": 2, "errorString": "Tracker gave HTTP 404"})), DownloadStatus::Downloading);
    let missing = json!({"error": 3, "errorString": "No data found! Ensure your drives are connected"});
    assert_eq!(with(missing), DownloadStatus::Missing);
    assert_eq!(with(json!({"error": 3, "errorString": "No space left on device"})), DownloadStatus::Failed);
}

#[test]
fn refusals_say_whose_and_why() {
    serve(Class::Read, |_, _| json!({"result": "no such method", "arguments": {}}));
    let Err(HostError::Invalid(m)) = Client::new().torrents(&[]) else { panic!() };
    assert!(m.contains("no such method"), "{m}");
    MockHost::new("test.transmission")
        .with_grant(Class::Read)
        .with_read_operation(SERVICE, "POST", RPC_PATH, &["torrent-get"])
        .with_service(SERVICE, |_| Ok(Response { status: 401, headers: Vec::new(), body: b"Unauthorized".to_vec() }))
        .install();
    assert!(matches!(Client::new().torrents(&[]), Err(HostError::Denied(_))));
}
