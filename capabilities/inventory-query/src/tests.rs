//! Native tests through the SDK's mock host: a library with one movie in
//! download and one series wanted.

use capstan_sdk::Failure;
use capstan_sdk::testing::{Called, Class, MockHost, descriptor, invoke};
use serde_json::{Value, json};

use crate::InventoryQuery;

fn install() {
    MockHost::new("inventory.query")
        .with_grant(Class::Read)
        .with_domain(|iface, name, arg| {
            assert_eq!(iface, "library", "a read capability only queries");
            Ok(match name {
                "inventory" => json!({"items": [
                    {"entity": {"id": "m1", "kind": "movie", "title": "Dune: Part Two", "year": 2024, "tmdbId": 693134},
                     "slots": [{"id": "s1", "season": null, "quality": "2160p", "status": "reserved"}]},
                    {"entity": {"id": "t1", "kind": "tv", "title": "Shōgun", "originalTitle": "Shogun", "year": 2024},
                     "slots": [{"id": "s2", "season": 1, "quality": "1080p", "status": "wanted"}]},
                ]}),
                "plans.list" if arg["slotId"] == "s1" => json!([
                    {"id": "p2", "status": "cancelled", "sourceReleaseId": "r2"},
                    {"id": "p1", "status": "submitted", "sourceReleaseId": "r1"},
                ]),
                "plans.list" => json!([]),
                "download.for-plan" if arg["id"] == "p1" => {
                    json!({"id": "d1", "status": "downloading", "progress": 0.4})
                }
                "download.for-plan" => Value::Null,
                "organizations.for-download" => json!([]),
                other => panic!("unexpected query {other}"),
            })
        })
        .install();
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
    let slot = &movie["slots"][0];
    assert_eq!(slot["plan"]["id"], "p1", "the submitted plan, not the newer cancelled one");
    assert_eq!(slot["download"]["status"], "downloading");
    assert!(slot.get("organization").is_none());
    let series = &out["items"][1]["slots"][0];
    assert!(series.get("plan").is_none() && series.get("download").is_none());
    assert_eq!(out["counts"], json!({"wanted": 1, "reserved": 1, "satisfied": 0}));
}

#[test]
fn filters_narrow_by_status_and_title_words() {
    install();
    let wanted = call(json!({"status": "wanted"})).unwrap();
    assert_eq!(wanted["items"].as_array().unwrap().len(), 1);
    assert_eq!(wanted["items"][0]["entityId"], "t1");
    let found = call(json!({"search": "shogun"})).unwrap();
    assert_eq!(found["items"][0]["entityId"], "t1", "the original title matches too");
    let none = call(json!({"search": "matrix"})).unwrap();
    assert_eq!(none["items"], json!([]));
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
