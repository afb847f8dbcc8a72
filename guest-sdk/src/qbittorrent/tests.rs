//! The client against [`MockHost`]: which endpoints and fields each WebAPI
//! line gets, how answers and states are read, and what is refused before
//! anything is sent.

use std::cell::RefCell;
use std::rc::Rc;

use super::*;
use crate::testing::{Class, MockHost};

const HASH: &str = "0123456789abcdef0123456789abcdef01234567";

/// Installs a mock whose `qbittorrent` service answers with `reply` and
/// returns the requests it saw.
fn serve(class: Class, mut reply: impl FnMut(&Request) -> Response + 'static) -> Rc<RefCell<Vec<Request>>> {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let log = seen.clone();
    MockHost::new("test.qbittorrent")
        .with_grant(class)
        .with_service(SERVICE, move |req| {
            log.borrow_mut().push(req.clone());
            Ok(reply(req))
        })
        .install();
    seen
}

fn ok(body: &str) -> Response {
    Response { status: 200, headers: Vec::new(), body: body.as_bytes().to_vec() }
}

fn status(code: u16, body: &str) -> Response {
    Response { status: code, ..ok(body) }
}

fn body_text(req: &Request) -> String {
    String::from_utf8_lossy(req.body.as_deref().unwrap_or_default()).into_owned()
}

#[test]
fn connect_reads_the_version_and_picks_the_4x_or_5x_endpoints() {
    for (reported, pause, resume) in [
        ("2.8.19\n", "/api/v2/torrents/pause", "/api/v2/torrents/resume"),
        ("2.11.2", "/api/v2/torrents/stop", "/api/v2/torrents/start"),
    ] {
        let seen = serve(Class::Execute, move |_| ok(reported));
        let client = Client::connect().unwrap();
        client.pause(&[HASH]).unwrap();
        client.resume(&[HASH.to_uppercase().as_str()]).unwrap();
        let seen = seen.borrow();
        let paths: Vec<_> = seen.iter().map(|r| (r.method.as_str(), r.path.as_str())).collect();
        assert_eq!(paths, [("GET", "/api/v2/app/webapiVersion"), ("POST", pause), ("POST", resume)]);
        assert_eq!(body_text(&seen[1]), format!("hashes={HASH}"));
        assert_eq!(body_text(&seen[2]), format!("hashes={HASH}"), "hashes are sent lowercase");
        assert_eq!(seen[1].headers, [("Content-Type".to_string(), "application/x-www-form-urlencoded".to_string())]);
    }
}

#[test]
fn versions_compare_numerically_not_as_text() {
    assert!(!WebApiVersion::parse("2.8.19").unwrap().uses_start_stop());
    assert!(!WebApiVersion::parse("2.10.4").unwrap().uses_start_stop());
    assert!(WebApiVersion::parse("2.11").unwrap().uses_start_stop());
    assert!(WebApiVersion::parse("3.0.0").unwrap().uses_start_stop());
    assert_eq!(WebApiVersion::parse(" 2.9.3 ").unwrap().to_string(), "2.9.3");
    for bad in ["", "2", "v2.8", "2.8.x", "2.8.1.1", "<html>"] {
        assert!(matches!(WebApiVersion::parse(bad), Err(HostError::Invalid(_))), "{bad:?}");
    }
}

#[test]
fn add_uploads_a_torrent_file_with_the_version_s_paused_field() {
    for (version, field) in [(WebApiVersion::new(2, 8, 19), "paused"), (WebApiVersion::new(2, 11, 0), "stopped")] {
        let seen = serve(Class::Execute, |_| ok("Ok."));
        let mut add = AddTorrent::file("show.torrent", b"d4:infod4:name4:showee".to_vec());
        add.save_path = Some("/srv/downloads".into());
        add.category = Some("tv".into());
        add.tags = vec!["capstan".into(), "plan-7".into()];
        add.paused = true;
        Client::for_version(version).add(&add).unwrap();

        let seen = seen.borrow();
        let req = &seen[0];
        assert_eq!((req.method.as_str(), req.path.as_str()), ("POST", "/api/v2/torrents/add"));
        let content_type = &req.headers[0].1;
        assert!(content_type.starts_with("multipart/form-data; boundary="), "{content_type}");
        let body = body_text(req);
        let field_value = |name: &str| {
            let marker = format!("name=\"{name}\"\r\n\r\n");
            let start = body.find(&marker).unwrap_or_else(|| panic!("no {name} field in {body}")) + marker.len();
            body[start..start + body[start..].find("\r\n").unwrap()].to_string()
        };
        assert_eq!(field_value("savepath"), "/srv/downloads");
        assert_eq!(field_value("category"), "tv");
        assert_eq!(field_value("tags"), "capstan,plan-7");
        assert_eq!(field_value(field), "true");
        assert!(body.contains("name=\"torrents\"; filename=\"show.torrent\""));
        assert!(body.contains("d4:infod4:name4:showee"));
        let other = if field == "paused" { "stopped" } else { "paused" };
        assert!(!body.contains(&format!("name=\"{other}\"")), "only this version's field is sent");
    }
}

#[test]
fn add_refusals_become_clear_errors() {
    let client = Client::for_version(WebApiVersion::new(2, 8, 19));
    let magnet = AddTorrent::url(format!("magnet:?xt=urn:btih:{HASH}"));

    serve(Class::Execute, |_| ok("Fails."));
    assert!(matches!(client.add(&magnet), Err(HostError::Conflict(m)) if m.contains("already present")));

    serve(Class::Execute, |_| status(415, "Torrent file is not valid."));
    assert!(matches!(client.add(&magnet), Err(HostError::Invalid(m)) if m.contains("not valid")));

    serve(Class::Execute, |_| status(409, "{\"success_count\":0}"));
    assert!(matches!(client.add(&magnet), Err(HostError::Conflict(_))));

    // Long or non-ASCII error pages are cut on a character boundary.
    serve(Class::Execute, |_| status(500, &"é".repeat(300)));
    assert!(matches!(client.add(&magnet), Err(HostError::Unavailable(m)) if m.ends_with(&"é".repeat(200))));

    serve(Class::Execute, |_| status(403, "Forbidden"));
    assert!(matches!(client.add(&magnet), Err(HostError::Denied(m)) if m.contains("login")));

    // Reads cannot add: the mock, like the host, denies the write import.
    serve(Class::Read, |_| ok("Ok."));
    assert!(matches!(client.add(&magnet), Err(HostError::Denied(_))));
}

#[test]
fn bad_input_is_refused_before_anything_is_sent() {
    let client = Client::for_version(WebApiVersion::new(2, 11, 0));
    let seen = serve(Class::Execute, |_| ok("Ok."));
    for hash in ["all", "", "0123|4567", &HASH[..39], &format!("{}zz", &HASH[..38])] {
        assert!(matches!(client.recheck(&[hash]), Err(HostError::Invalid(_))), "{hash:?}");
        assert!(matches!(client.torrent(hash), Err(HostError::Invalid(_))), "{hash:?}");
    }
    assert!(matches!(client.pause(&[]), Err(HostError::Invalid(_))));
    assert!(matches!(client.add(&AddTorrent::default()), Err(HostError::Invalid(_))));
    assert!(matches!(client.add(&AddTorrent::url("magnet:?a\nhttp://other")), Err(HostError::Invalid(_))));
    let mut tagged = AddTorrent::url("magnet:?xt=urn:btih:abc");
    tagged.tags = vec!["a,b".into()];
    assert!(matches!(client.add(&tagged), Err(HostError::Invalid(_))));
    assert!(seen.borrow().is_empty());
}

#[test]
fn torrent_reads_info_and_maps_the_state() {
    let info = format!(
        r#"[{{"hash":"{HASH}","name":"Show.S01E01.mkv","state":"stoppedUP","progress":1,"size":1000,
            "save_path":"/srv/downloads","content_path":"/srv/downloads/Show.S01E01.mkv",
            "category":"tv","tags":"capstan, plan-7","amount_left":0,"future_field":true}}]"#
    );
    let seen = serve(Class::Read, move |_| ok(&info));
    let client = Client::for_version(WebApiVersion::new(2, 11, 0));
    let torrent = client.torrent(&HASH.to_uppercase()).unwrap().unwrap();
    assert_eq!(seen.borrow()[0].query, [("hashes".to_string(), HASH.to_string())]);
    assert_eq!(torrent.name, "Show.S01E01.mkv");
    assert_eq!(torrent.tags, ["capstan", "plan-7"]);
    assert_eq!(torrent.content_path, "/srv/downloads/Show.S01E01.mkv");
    assert_eq!(torrent.state(), TorrentState::StoppedUp);
    assert_eq!(torrent.status(), DownloadStatus::Completed);

    serve(Class::Read, |_| ok("[]"));
    assert_eq!(client.torrent(HASH).unwrap(), None, "an unknown hash is not an error");

    let seen = serve(Class::Read, |_| ok("[]"));
    let filter = TorrentFilter { category: Some("tv".into()), tag: Some("capstan".into()), ..TorrentFilter::default() };
    client.torrents(&filter).unwrap();
    assert_eq!(
        seen.borrow()[0].query,
        [("category".to_string(), "tv".to_string()), ("tag".to_string(), "capstan".to_string())]
    );
}

#[test]
fn both_naming_lines_map_to_the_same_statuses() {
    use DownloadStatus as D;
    let cases = [
        ("pausedUP", 1.0, D::Completed),
        ("stoppedUP", 1.0, D::Completed),
        ("uploading", 1.0, D::Completed),
        ("stalledUP", 1.0, D::Completed),
        ("queuedUP", 1.0, D::Completed),
        ("forcedUP", 1.0, D::Completed),
        ("stalledUP", 0.6, D::Stalled),
        ("checkingUP", 1.0, D::Queued),
        ("checkingDL", 0.2, D::Queued),
        ("checkingResumeData", 0.0, D::Queued),
        ("queuedDL", 0.0, D::Queued),
        ("metaDL", 0.0, D::Queued),
        ("downloading", 0.3, D::Downloading),
        ("forcedDL", 0.3, D::Downloading),
        ("forcedMetaDL", 0.0, D::Downloading),
        ("allocating", 0.0, D::Downloading),
        ("moving", 1.0, D::Downloading),
        ("stalledDL", 0.3, D::Stalled),
        ("pausedDL", 0.3, D::Paused),
        ("stoppedDL", 0.3, D::Paused),
        ("stoppedUP", 0.6, D::Paused),
        ("unknown", 0.0, D::Stalled),
        ("someFutureState", 1.0, D::Stalled),
        ("missingFiles", 1.0, D::Missing),
        ("error", 1.0, D::Failed),
    ];
    for (state, progress, expected) in cases {
        assert_eq!(TorrentState::from_api(state).status(progress), expected, "{state} at {progress}");
    }
    assert_eq!(TorrentState::from_api("pausedDL"), TorrentState::from_api("stoppedDL"));
    assert_eq!(TorrentState::from_api("pausedUP"), TorrentState::from_api("stoppedUP"));
    assert!(TorrentState::from_api("stoppedUP").is_stopped());
    assert!(TorrentState::from_api("checkingResumeData").is_checking());
    assert!(!TorrentState::from_api("stalledUP").is_checking());
    assert_eq!(TorrentState::from_api("someFutureState"), TorrentState::Unknown("someFutureState".into()));
}
