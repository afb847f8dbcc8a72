//! `mediaserver.refresh` against the mock host: Jellyfin and Emby get one
//! library update notice for every folder; Plex is asked per folder in the
//! section whose location holds it, and a folder no section holds is
//! refused before anything is rescanned; bad folders send nothing; a
//! refused key and a busy server say which they are.

use capstan_sdk::host::{Request, Response};
use capstan_sdk::testing::{Called, MockHost, invoke};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::MediaServerRefresh;

fn answer(status: u16, body: Value) -> Result<Response, HostError> {
    let body = if body.is_null() { Vec::new() } else { body.to_string().into_bytes() };
    Ok(Response { status, headers: Vec::new(), body })
}

fn sent() -> Vec<Request> {
    MockHost::take().unwrap().requests
}

fn sections() -> Value {
    json!({"MediaContainer": {"size": 2, "Directory": [
        {"key": "1", "title": "Movies", "type": "movie", "Location": [{"id": 1, "path": "/data/movies"}]},
        {"key": "2", "title": "TV Shows", "type": "show", "Location": [{"id": 2, "path": "/data/tv/"}]},
    ]}})
}

#[test]
fn jellyfin_is_told_of_every_folder_in_one_notice() {
    MockHost::new("mediaserver.refresh").with_service("jellyfin", |_| answer(204, Value::Null)).install();
    let folders = ["/media/Dune (2021)", "/media/Shōgun (2024)/Season 01", "/media/Dune (2021)"];
    let Called::Succeeded(out) =
        invoke::<MediaServerRefresh>(json!({"server": "jellyfin", "folders": folders})).unwrap()
    else {
        panic!()
    };
    assert_eq!(out["folders"], json!(["/media/Dune (2021)", "/media/Shōgun (2024)/Season 01"]));
    let requests = sent();
    assert_eq!(requests.len(), 1);
    assert_eq!((requests[0].method.as_str(), requests[0].path.as_str()), ("POST", "/Library/Media/Updated"));
    let body: Value = serde_json::from_slice(requests[0].body.as_ref().unwrap()).unwrap();
    assert_eq!(body["Updates"][1], json!({"Path": "/media/Shōgun (2024)/Season 01", "UpdateType": "Created"}));
}

#[test]
fn plex_rescans_each_folder_in_the_section_that_holds_it() {
    MockHost::new("mediaserver.refresh")
        .with_service(
            "plex",
            |req| if req.method == "GET" { answer(200, sections()) } else { answer(200, Value::Null) },
        )
        .install();
    let folders = ["/data/tv/Shōgun (2024)/Season 01", "/data/movies/Dune (2021)"];
    let Called::Succeeded(out) = invoke::<MediaServerRefresh>(json!({"server": "plex", "folders": folders})).unwrap()
    else {
        panic!()
    };
    assert_eq!(out["sections"], json!(["Movies", "TV Shows"]));
    let refreshes: Vec<(String, String)> = sent()
        .into_iter()
        .filter(|r| r.method == "POST")
        .map(|r| (r.path, r.query.iter().find(|(k, _)| k == "path").unwrap().1.clone()))
        .collect();
    assert_eq!(
        refreshes,
        [
            ("/library/sections/1/refresh".to_string(), "/data/movies/Dune (2021)".to_string()),
            ("/library/sections/2/refresh".to_string(), "/data/tv/Shōgun (2024)/Season 01".to_string())
        ]
    );

    // A folder no section holds is said, and nothing is rescanned.
    MockHost::new("mediaserver.refresh").with_service("plex", |_| answer(200, sections())).install();
    let outside = json!({"server": "plex", "folders": ["/data/movies/Dune (2021)", "/elsewhere/Dune"]});
    let Err(Failure::InvalidInput(m)) = invoke::<MediaServerRefresh>(outside) else { panic!() };
    assert!(m.contains("/elsewhere/Dune") && m.contains("/data/movies"), "{m}");
    assert!(sent().iter().all(|r| r.method == "GET"), "nothing rescanned");
    // A location's name is not a prefix of another folder's.
    MockHost::new("mediaserver.refresh").with_service("plex", |_| answer(200, sections())).install();
    let sibling = json!({"server": "plex", "folders": ["/data/movies-4k/Dune"]});
    assert!(matches!(invoke::<MediaServerRefresh>(sibling), Err(Failure::InvalidInput(_))));
}

#[test]
fn bad_folders_and_servers_send_nothing() {
    for input in [
        json!({"server": "kodi", "folders": ["/media/x"]}),
        json!({"server": "emby", "folders": []}),
        json!({"server": "emby", "folders": ["media/relative"]}),
        json!({"server": "emby", "folders": ["/media/../etc"]}),
        json!({"server": "emby", "folders": ["/media/a\nb"]}),
    ] {
        MockHost::new("mediaserver.refresh").with_service("emby", |_| answer(204, Value::Null)).install();
        assert!(matches!(invoke::<MediaServerRefresh>(input.clone()), Err(Failure::InvalidInput(_))), "{input}");
        assert!(sent().is_empty());
    }
}

#[test]
fn a_refused_key_and_a_busy_server_say_which() {
    let input = json!({"server": "emby", "folders": ["/media/Dune"]});
    MockHost::new("mediaserver.refresh").with_service("emby", |_| answer(401, Value::Null)).install();
    let Err(Failure::Denied(m)) = invoke::<MediaServerRefresh>(input.clone()) else { panic!() };
    assert!(m.contains("Emby refused the key"), "{m}");
    MockHost::new("mediaserver.refresh").with_service("emby", |_| answer(503, json!("starting"))).install();
    assert!(matches!(invoke::<MediaServerRefresh>(input), Err(Failure::Unavailable(_))));
}
