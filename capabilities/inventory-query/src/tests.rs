//! Native tests through the SDK's mock host: a library with one movie in
//! download and one series wanted.

use capstan_sdk::Failure;
use capstan_sdk::contract::ops::queries::{ByKind, PlansListed};
use capstan_sdk::contract::records::{DownloadTask, Entity, Organization, Plan, Slot};
use capstan_sdk::contract::status::{DownloadStatus, OrganizationStatus, PlanStatus, SlotStatus};
use capstan_sdk::testing::{Called, Class, MockHost, descriptor, invoke, records};
use serde_json::{Value, json};

use crate::InventoryQuery;

/// The library: a 2160p movie being downloaded (its slot shown with the
/// download, as the store shows activity), a series season wanted, and a
/// movie already in the library.
fn inventory(arg: &Value) -> Value {
    let ByKind { kind, limit } = serde_json::from_value(arg.clone()).unwrap();
    assert_eq!(limit, 1000);
    let dune = Entity {
        kind: capstan_sdk::contract::status::EntityKind::Movie,
        title: "Dune: Part Two".into(),
        year: Some(2024),
        tmdb_id: Some(693134),
        ..records::entity("m1")
    };
    let mut dune_slot =
        json!(Slot { quality: "2160p".into(), status: SlotStatus::Reserved, ..records::slot("s1", "m1") });
    dune_slot["download"] = json!({"id": "d1", "planId": "p1", "status": DownloadStatus::Downloading, "progress": 0.4,
        "clientState": "downloading", "downloadSpeed": 1_000_000, "seeds": 3, "etaSeconds": 600, "updatedAt": 1});
    let shogun = Entity {
        kind: capstan_sdk::contract::status::EntityKind::Tv,
        title: "Shōgun".into(),
        original_title: Some("Shogun".into()),
        year: Some(2024),
        seasons: json!([{"number": 1, "episodeCount": 10}]),
        ..records::entity("t1")
    };
    let shogun_slot = Slot { season: Some(1), ..records::slot("s2", "t1") };
    let arrival = Entity { title: "Arrival".into(), year: Some(2016), ..records::entity("m2") };
    let arrival_slot = Slot { status: SlotStatus::Satisfied, ..records::slot("s3", "m2") };
    let items = [
        json!({"entity": dune, "slots": [dune_slot]}),
        json!({"entity": shogun, "slots": [shogun_slot]}),
        json!({"entity": arrival, "slots": [arrival_slot]}),
    ];
    let items: Vec<&Value> = items.iter().filter(|i| kind.is_none() || i["entity"]["kind"] == json!(kind)).collect();
    json!({ "items": items })
}

fn install() {
    host().install();
}

fn host() -> MockHost {
    MockHost::new("inventory.query").with_grant(Class::Read).with_domain(|iface, name, arg| {
        assert_eq!(iface, "library", "a read capability only queries");
        Ok(match name {
            "inventory" => inventory(arg),
            "plans.list" => {
                let listed: PlansListed = serde_json::from_value(arg.clone()).unwrap();
                assert_eq!((listed.status, listed.limit), (None, 20));
                match listed.slot_id.as_deref() {
                    Some("s1") => json!([
                        Plan {
                            status: PlanStatus::Cancelled,
                            source_release_id: "r2".into(),
                            ..records::plan("p2", json!({}))
                        },
                        Plan {
                            status: PlanStatus::Submitted,
                            source_release_id: "r1".into(),
                            ..records::plan("p1", json!({}))
                        },
                    ]),
                    Some("s3") => json!([Plan {
                        status: PlanStatus::Submitted,
                        source_release_id: "r3".into(),
                        ..records::plan("p3", json!({}))
                    }]),
                    _ => json!([]),
                }
            }
            "download.for-plan" if arg["id"] == "p1" => json!(DownloadTask {
                status: DownloadStatus::Downloading,
                progress: 0.4,
                ..records::download("d1", "p1", "hash1")
            }),
            "download.for-plan" if arg["id"] == "p3" => json!(DownloadTask {
                status: DownloadStatus::Imported,
                progress: 1.0,
                ..records::download("d3", "p3", "hash3")
            }),
            "download.for-plan" => Value::Null,
            "organizations.for-download" if arg["id"] == "d3" => json!([Organization {
                status: OrganizationStatus::Succeeded,
                ..records::organization("o3", "d3", json!([]))
            }]),
            "organizations.for-download" => json!([]),
            other => panic!("unexpected query {other}"),
        })
    })
}

fn call(input: Value) -> Result<Value, Failure> {
    match invoke::<InventoryQuery>(input)? {
        Called::Succeeded(v) => Ok(v),
        Called::Pending(v) => panic!("never pending: {v}"),
    }
}

#[test]
fn each_slot_shows_its_live_plan_and_download() {
    install();
    let out = call(json!({})).unwrap();
    let movie = &out["items"][0];
    assert_eq!(movie["title"], "Dune: Part Two");
    assert_eq!((movie["kind"].as_str(), movie["tmdbId"].as_i64()), (Some("movie"), Some(693134)));
    let slot = &movie["slots"][0];
    assert_eq!(
        slot["plan"],
        json!({"id": "p1", "status": "submitted", "sourceReleaseId": "r1"}),
        "the submitted plan, not the newer cancelled one"
    );
    assert_eq!(slot["download"], json!({"id": "d1", "status": "downloading", "progress": 0.4}));
    assert!(slot.get("organization").is_none());
    let series = &out["items"][1]["slots"][0];
    assert_eq!((series["season"].as_i64(), series["status"].as_str()), (Some(1), Some("wanted")));
    assert!(series.get("plan").is_none() && series.get("download").is_none());
    let held = &out["items"][2]["slots"][0];
    assert_eq!(held["organization"], json!({"id": "o3", "status": "succeeded", "mode": "hardlink"}));
    assert_eq!(out["counts"], json!({"wanted": 1, "reserved": 1, "satisfied": 1}));
}

#[test]
fn filters_narrow_by_status_and_title_words() {
    install();
    let wanted = call(json!({"status": "wanted"})).unwrap();
    assert_eq!(wanted["items"].as_array().unwrap().len(), 1);
    assert_eq!(wanted["items"][0]["entityId"], "t1");
    assert_eq!(wanted["counts"], json!({"wanted": 1, "reserved": 0, "satisfied": 0}));
    let found = call(json!({"search": "shogun"})).unwrap();
    assert_eq!(found["items"][0]["entityId"], "t1", "the original title matches too");
    let none = call(json!({"search": "matrix"})).unwrap();
    assert_eq!(none["items"], json!([]));
    let series = call(json!({"kind": "tv"})).unwrap();
    assert_eq!(series["items"].as_array().unwrap().len(), 1, "the kind reaches the store: {series}");
    let first = call(json!({"limit": 1})).unwrap();
    assert_eq!(first["items"].as_array().unwrap().len(), 1);
}

#[test]
fn bad_filters_are_refused() {
    install();
    assert!(matches!(call(json!({"limit": 0})), Err(Failure::InvalidInput(_))));
    assert!(matches!(call(json!({"search": " - "})), Err(Failure::InvalidInput(_))));
    assert!(matches!(call(json!({"status": "lost"})), Err(Failure::InvalidInput(_))));
    assert!(matches!(call(json!({"kinds": "movie"})), Err(Failure::InvalidInput(_))));
}

#[test]
fn the_descriptor_answers_to_library_words_in_both_languages() {
    let d = descriptor::<InventoryQuery>();
    assert!(d.aliases.iter().any(|a| a == "what do I have") && d.aliases.iter().any(|a| a == "媒体库"));
}

#[test]
fn media_servers_say_whether_they_hold_each_title() {
    use capstan_sdk::HostError;
    use capstan_sdk::host::Response;
    let json_answer = |body: Value| {
        Ok::<_, HostError>(Response { status: 200, headers: Vec::new(), body: body.to_string().into_bytes() })
    };
    host()
        .with_service("jellyfin", move |req| {
            let term = req.query.iter().find(|(k, _)| k == "SearchTerm").map(|(_, v)| v.clone()).unwrap_or_default();
            let items = match term.as_str() {
                // Another film of the same name, and the one with Dune's TMDB id.
                "Dune: Part Two" => {
                    json!([{"Name": "Dune: Part Two", "ProductionYear": 1999, "ProviderIds": {"Tmdb": "1"}},
                    {"Name": "Dune: Part Two", "ProductionYear": 2024, "ProviderIds": {"Tmdb": "693134"}}])
                }
                _ => json!([]),
            };
            json_answer(json!({"Items": items, "TotalRecordCount": 1}))
        })
        .with_service("plex", move |req| {
            assert_eq!(req.path, "/library/all");
            let title = req.query.iter().find(|(k, _)| k == "title").map(|(_, v)| v.clone()).unwrap_or_default();
            let items =
                if title == "Arrival" { json!([{"title": "Arrival", "year": 2016, "Guid": []}]) } else { json!([]) };
            json_answer(json!({"MediaContainer": {"Metadata": items}}))
        })
        .install();
    let out = call(json!({"mediaServers": true})).unwrap();
    let said = |i: usize| out["items"][i]["onServers"].clone();
    assert_eq!(said(0), json!([{"server": "jellyfin", "holds": true}, {"server": "plex", "holds": false}]), "{out}");
    assert_eq!(
        said(2),
        json!([{"server": "jellyfin", "holds": false}, {"server": "plex", "holds": true}]),
        "by name and year"
    );
    let requests = MockHost::take().unwrap().requests;
    assert!(requests.iter().all(|r| r.method == "GET"), "only reads");
    install();
    assert!(call(json!({})).unwrap()["items"][0].get("onServers").is_none(), "not asked unless asked for");
    assert!(matches!(call(json!({"mediaServers": true, "limit": 26})), Err(Failure::InvalidInput(_))));
}
