//! `download.submit` against the mock host: a fake qBittorrent that keeps
//! the torrents it was given, a fake domain store that keeps the plan's
//! status. What a user would notice: one torrent per plan however often it
//! is submitted, nothing added when the slot moved on, an indexer's link
//! fetched as that indexer and uploaded as a file, its refusal a failure
//! with the reason, and `verify` answering from state.

use std::cell::RefCell;
use std::rc::Rc;

use capstan_sdk::contract::records::Plan;
use capstan_sdk::contract::status::PlanStatus;
use capstan_sdk::host::{Request, Response};
use capstan_sdk::testing::{Called, MockHost, descriptor, invoke, records};
use capstan_sdk::{Capability, HostError, Verification};
use serde_json::{Value, json};

use crate::{DownloadSubmit, SubmitInput};

const HASH: &str = "0123456789abcdef0123456789abcdef01234567";

struct World {
    plan_status: PlanStatus,
    torrents: Vec<String>,
    adds: Vec<String>,
    reserve_conflict: bool,
    qbittorrent_down: bool,
}

fn ok(body: impl Into<Vec<u8>>) -> Response {
    Response { status: 200, headers: Vec::new(), body: body.into() }
}

fn qbittorrent(world: &Rc<RefCell<World>>, req: &Request) -> Result<Response, HostError> {
    let mut w = world.borrow_mut();
    if w.qbittorrent_down {
        return Err(HostError::Unavailable("connection refused".into()));
    }
    match req.path.as_str() {
        "/api/v2/app/webapiVersion" => Ok(ok("2.8.19")),
        "/api/v2/torrents/info" => {
            let wanted = req.query.iter().find(|(n, _)| n == "hashes").map(|(_, v)| v.clone());
            let list: Vec<Value> = w
                .torrents
                .iter()
                .filter(|h| wanted.as_deref().is_none_or(|x| x == h.as_str()))
                .map(|h| json!({"hash": h, "state": "stalledDL", "progress": 0.0, "tags": "plan:p1"}))
                .collect();
            Ok(ok(serde_json::to_vec(&list).unwrap()))
        }
        "/api/v2/torrents/add" => {
            w.adds.push(String::from_utf8_lossy(req.body.as_deref().unwrap_or_default()).into_owned());
            w.torrents.push(HASH.into());
            Ok(ok("Ok."))
        }
        other => panic!("unexpected qBittorrent call {other}"),
    }
}

fn domain(
    world: &Rc<RefCell<World>>,
    payload: &Value,
    iface: &str,
    name: &str,
    arg: &Value,
) -> Result<Value, HostError> {
    let mut w = world.borrow_mut();
    assert_eq!(arg.get("planId").or(arg.get("id")), Some(&json!("p1")), "{iface} {name} {arg}");
    let plan = |status: PlanStatus| json!(Plan { status, ..records::plan("p1", payload.clone()) });
    let download = json!(records::download("dl-1", "p1", HASH));
    match (iface, name) {
        ("library", "plan.get") => Ok(plan(w.plan_status)),
        ("library", "download.for-plan") if w.plan_status == PlanStatus::Submitted => Ok(download),
        ("library", "download.for-plan") => Ok(Value::Null),
        ("records", "plan.reserve") if w.reserve_conflict => {
            Err(HostError::Conflict("slot s1 changed since the plan was drafted; draft a new plan".into()))
        }
        ("records", "plan.reserve") => {
            if w.plan_status == PlanStatus::Draft {
                w.plan_status = PlanStatus::Reserved;
            }
            Ok(plan(w.plan_status))
        }
        ("records", "plan.submitted") => {
            assert_eq!(arg["clientHash"], HASH);
            w.plan_status = PlanStatus::Submitted;
            Ok(json!({"plan": plan(PlanStatus::Submitted), "download": download}))
        }
        other => panic!("unexpected domain call {other:?}"),
    }
}

/// Installs a mock around `world`; `setup` adds settings or services.
fn install(world: &Rc<RefCell<World>>, payload: Value, setup: impl FnOnce(MockHost) -> MockHost) {
    let (q, d) = (world.clone(), world.clone());
    let host = MockHost::new("download.submit")
        .with_service("qbittorrent", move |req| qbittorrent(&q, req))
        .with_domain(move |iface, name, arg| domain(&d, &payload, iface, name, arg));
    setup(host).install();
}

fn world(status: &str) -> Rc<RefCell<World>> {
    let plan_status = PlanStatus::parse(status).unwrap();
    Rc::new(RefCell::new(World {
        plan_status,
        torrents: Vec::new(),
        adds: Vec::new(),
        reserve_conflict: false,
        qbittorrent_down: false,
    }))
}

fn submit() -> Result<Value, capstan_sdk::Failure> {
    match invoke::<DownloadSubmit>(json!({"planId": "p1"}))? {
        Called::Succeeded(out) => Ok(out),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_plan_is_added_once_by_magnet_however_often_it_is_submitted() {
    let world = world("draft");
    install(&world, json!({"title": "Dune Part Two (2024)", "infohash": HASH.to_uppercase()}), |h| h);
    let first = submit().unwrap();
    assert_eq!(first, json!({"planId": "p1", "downloadTaskId": "dl-1", "clientHash": HASH, "added": true}));
    let again = submit().unwrap();
    assert_eq!(again["added"], false);
    assert_eq!(again["downloadTaskId"], "dl-1");

    let w = world.borrow();
    assert_eq!(w.adds.len(), 1, "the second submit finds the torrent and adds nothing");
    let body = &w.adds[0];
    assert!(body.contains(&format!("magnet:?xt=urn:btih:{HASH}&dn=Dune%20Part%20Two%20%282024%29")), "{body}");
    assert!(body.contains("plan:p1"), "tagged with the plan");
    assert!(body.contains("name=\"category\"\r\n\r\ncapstan\r\n"), "default category");
    assert!(!body.contains("savepath"), "qBittorrent's own default save path");
}

#[test]
fn a_slot_that_moved_on_is_a_conflict_and_nothing_is_added() {
    let world = world("draft");
    world.borrow_mut().reserve_conflict = true;
    install(&world, json!({"infohash": HASH}), |h| h);
    let failure = submit().unwrap_err();
    assert!(failure.to_string().starts_with("conflict"), "{failure}");
    let sent = MockHost::take().unwrap().requests;
    assert!(sent.iter().all(|r| r.method == "GET"), "only reads were sent: {sent:?}");
    assert!(world.borrow().adds.is_empty(), "nothing was added");
}

/// An indexer service at `origin` answering every link on it with
/// `answer`; a link elsewhere is refused as the host refuses it.
fn indexer(
    origin: &'static str,
    seen: Rc<RefCell<Vec<String>>>,
    answer: impl Fn(&str) -> Response + 'static,
) -> impl Fn(&Request) -> Result<Response, HostError> + 'static {
    move |req: &Request| {
        if !req.path.starts_with(origin) {
            return Err(HostError::Invalid(format!("{} is not on this service's address", req.path)));
        }
        assert_eq!(req.method, "GET");
        seen.borrow_mut().push(req.path.clone());
        Ok(answer(&req.path))
    }
}

const TORRENT: &[u8] = b"d4:infod4:name5:dune!ee";
const JACKETT: &str = "http://jackett:9117/dl/yts/?jackett_apikey=%5Bredacted%5D&path=Q2ZESjhH&file=Dune";
const PROWLARR: &str = "http://prowlarr:9696/1/download?apikey=%5Bredacted%5D&link=ZHVuZQ&file=Dune";

fn with_indexers(
    h: MockHost,
    jackett: Rc<RefCell<Vec<String>>>,
    prowlarr: Rc<RefCell<Vec<String>>>,
    answer: fn(&str) -> Response,
) -> MockHost {
    h.with_service("torznab", indexer("http://jackett:9117/", jackett, answer))
        .with_service("torznab-2", indexer("http://prowlarr:9696/", prowlarr, answer))
}

#[test]
fn an_indexer_s_link_is_fetched_as_that_indexer_and_uploaded_as_a_file() {
    // Jackett's and Prowlarr's links, each fetched through the service on
    // whose address it is, even when the plan names the other indexer.
    for (link, plan_indexer, fetched_by_jackett) in
        [(JACKETT, "torznab", true), (PROWLARR, "torznab-2", false), (PROWLARR, "torznab", false)]
    {
        let world = world("draft");
        let (jackett, prowlarr) = (Rc::new(RefCell::new(Vec::new())), Rc::new(RefCell::new(Vec::new())));
        let payload = json!({"infohash": HASH, "indexer": plan_indexer, "downloadUrl": link,
            "magnetUrl": format!("magnet:?xt=urn:btih:{HASH}&tr=http%3A%2F%2Ftracker%2Fannounce")});
        let (j, p) = (jackett.clone(), prowlarr.clone());
        install(&world, payload, move |h| {
            with_indexers(h, j, p, |_| ok(TORRENT.to_vec()))
                .with_setting("category", "movies")
                .with_setting("save_path", "/srv/downloads/movies")
        });
        assert_eq!(submit().unwrap()["added"], true);
        let fetched = if fetched_by_jackett { jackett.borrow().clone() } else { prowlarr.borrow().clone() };
        assert_eq!(fetched, [link], "the link went to its own indexer as given, slot and all");
        let body = world.borrow().adds[0].clone();
        assert!(body.contains(&format!("filename=\"{HASH}.torrent\"")), "{body}");
        assert!(body.contains("d4:infod4:name5:dune!ee"), "the fetched bytes are uploaded");
        assert!(!body.contains("magnet:") && !body.contains("redacted"), "no magnet, no link: {body}");
        assert!(body.contains("name=\"category\"\r\n\r\nmovies\r\n"));
        assert!(body.contains("name=\"savepath\"\r\n\r\n/srv/downloads/movies\r\n"));
        assert_eq!(world.borrow().plan_status, PlanStatus::Submitted);
    }
}

#[test]
fn an_indexer_that_redirects_to_a_magnet_gives_that_magnet_as_is() {
    let world = world("draft");
    let none = Rc::new(RefCell::new(Vec::new()));
    install(&world, json!({"infohash": HASH, "indexer": "torznab", "downloadUrl": JACKETT}), move |h| {
        with_indexers(h, none.clone(), none, |_| Response {
            status: 302,
            headers: vec![("Location".into(), format!("magnet:?xt=urn:btih:{HASH}&tr=udp%3A%2F%2Ft%3A1"))],
            body: Vec::new(),
        })
    });
    assert_eq!(submit().unwrap()["added"], true);
    let body = world.borrow().adds[0].clone();
    assert!(body.contains(&format!("magnet:?xt=urn:btih:{HASH}&tr=udp%3A%2F%2Ft%3A1")), "trackers kept: {body}");
}

#[test]
fn an_indexer_refusing_the_link_fails_with_the_reason_and_adds_nothing() {
    let cases: [(u16, &str, &str); 3] = [
        (401, "denied", "check its API key under Services"),
        (404, "not found", "pick another release"),
        (503, "unavailable", "tried again later"),
    ];
    for (status, kind, hint) in cases {
        let world = world("draft");
        let none = Rc::new(RefCell::new(Vec::new()));
        install(&world, json!({"infohash": HASH, "indexer": "torznab", "downloadUrl": JACKETT}), move |h| {
            let answer: fn(&str) -> Response = match status {
                401 => |_| Response { status: 401, headers: Vec::new(), body: Vec::new() },
                404 => |_| Response { status: 404, headers: Vec::new(), body: Vec::new() },
                _ => |_| Response { status: 503, headers: Vec::new(), body: Vec::new() },
            };
            with_indexers(h, none.clone(), none, answer)
        });
        let failure = submit().unwrap_err().to_string();
        assert!(failure.starts_with(kind) && failure.contains(hint), "{status}: {failure}");
        assert!(world.borrow().adds.is_empty(), "nothing reached qBittorrent");
        assert_eq!(world.borrow().plan_status, PlanStatus::Draft, "the plan was not reserved, so it can be retried");
    }
}

#[test]
fn a_failing_link_falls_back_to_the_indexer_s_magnet_as_given() {
    let world = world("draft");
    let none = Rc::new(RefCell::new(Vec::new()));
    let magnet = format!("magnet:?xt=urn:btih:{HASH}&dn=Dune&tr=http%3A%2F%2Ftracker%3A6969%2Fannounce");
    let payload = json!({"infohash": HASH, "downloadUrl": JACKETT, "magnetUrl": magnet});
    install(&world, payload, move |h| {
        with_indexers(h, none.clone(), none, |_| Response { status: 500, headers: Vec::new(), body: Vec::new() })
    });
    assert_eq!(submit().unwrap()["added"], true);
    assert!(world.borrow().adds[0].contains(&magnet), "the magnet with its tracker");
}

#[test]
fn a_link_on_no_indexer_s_address_goes_to_the_client_unless_it_needs_a_key() {
    let world = world("draft");
    let none = Rc::new(RefCell::new(Vec::new()));
    let public = "https://releases.example.org/dune.torrent";
    let n = none.clone();
    install(&world, json!({"infohash": HASH, "downloadUrl": public}), move |h| {
        with_indexers(h, n.clone(), n, |_| panic!("not an indexer's link"))
    });
    assert_eq!(submit().unwrap()["added"], true);
    assert!(world.borrow().adds[0].contains(public), "qBittorrent fetches a public link itself");

    let world = self::world("draft");
    let keyed = "http://elsewhere:9117/dl/x?apikey=%5Bredacted%5D";
    install(&world, json!({"infohash": HASH, "downloadUrl": keyed}), move |h| {
        with_indexers(h, none.clone(), none, |_| panic!("not an indexer's link"))
    });
    let failure = submit().unwrap_err().to_string();
    assert!(failure.starts_with("denied") && failure.contains("no configured indexer"), "{failure}");
    assert!(world.borrow().adds.is_empty());
}

#[test]
fn a_release_with_nothing_to_add_is_invalid_input_and_reserves_nothing() {
    let world = world("draft");
    install(&world, json!({"title": "Mystery", "downloadUrl": " "}), |h| h);
    let failure = submit().unwrap_err();
    assert!(failure.to_string().starts_with("invalid input"), "{failure}");
    assert!(failure.to_string().contains("neither an infohash nor a download link"), "{failure}");
    assert_eq!(world.borrow().plan_status, PlanStatus::Draft);
}

#[test]
fn verify_answers_from_the_plan_and_qbittorrent() {
    let input = || SubmitInput { plan_id: "p1".into() };
    let world = world("reserved");
    install(&world, json!({"infohash": HASH}), |h| h);
    assert_eq!(DownloadSubmit::verify(input()).unwrap(), Verification::NotDone);

    world.borrow_mut().plan_status = PlanStatus::Submitted;
    world.borrow_mut().torrents.push(HASH.into());
    match DownloadSubmit::verify(input()).unwrap() {
        Verification::Done(out) => {
            assert_eq!((out.download_task_id.as_str(), out.client_hash.as_str()), ("dl-1", HASH))
        }
        other => panic!("{other:?}"),
    }

    world.borrow_mut().qbittorrent_down = true;
    assert!(matches!(DownloadSubmit::verify(input()).unwrap(), Verification::CannotTell(_)));
}

#[test]
fn the_descriptor_names_every_service_it_uses_and_replays_by_verifying() {
    let d = descriptor::<DownloadSubmit>();
    assert_eq!(
        d.services,
        ["qbittorrent", "transmission", "torznab", "torznab-2", "torznab-3", "rss", "rss-2", "rss-3"]
    );
    assert!(d.tags.iter().any(|t| t == "plan:acquisition"));
    assert!(d.aliases.iter().any(|a| a == "提交下载"));
    assert!(matches!(d.replay, capstan_sdk::bindings::capstan::capability::types::ReplayPolicy::Verify));
}
