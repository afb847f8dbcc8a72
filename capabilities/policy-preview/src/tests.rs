//! Native tests through the SDK's mock host with a read-only grant: one
//! wanted movie with a 2160p web release and a 1080p Blu-ray release.

use capstan_sdk::contract::records::{Entity, Slot, SourceRelease};
use capstan_sdk::testing::{Called, Class, MockHost, invoke, records};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::PolicyPreview;

fn release(id: &str, title: &str, size: i64) -> SourceRelease {
    SourceRelease { entity_id: Some("m1".into()), size: Some(size), ..records::release(id, title) }
}

fn install(published: Option<Value>) {
    MockHost::new("policy.preview")
        .with_grant(Class::Preview)
        .with_domain(move |iface, name, arg| {
            assert_eq!(iface, "library", "a preview only reads");
            match name {
                "policy.get" => published
                    .clone()
                    .map(|body| json!(records::policy(arg["name"].as_str().unwrap(), body)))
                    .ok_or_else(|| HostError::NotFound("no published policy".into())),
                "slots.list" => {
                    assert_eq!((&arg["status"], &arg["limit"]), (&json!("wanted"), &json!(1000)));
                    Ok(json!([Slot { quality: "2160p".into(), ..records::slot("s1", "m1") }]))
                }
                "entity.get" => {
                    assert_eq!(arg["id"], "m1");
                    Ok(json!(Entity { title: "Dune: Part Two".into(), year: Some(2024), ..records::entity("m1") }))
                }
                "releases.for-entity" => {
                    assert_eq!(arg["id"], "m1");
                    Ok(json!([
                        release("r-uhd", "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX", 20_000_000_000),
                        release("r-hd", "Dune.Part.Two.2024.1080p.BluRay.x264-GRP", 12_000_000_000),
                    ]))
                }
                other => panic!("unexpected query {other}"),
            }
        })
        .install();
}

fn call(input: Value) -> Result<Value, Failure> {
    match invoke::<PolicyPreview>(input)? {
        Called::Succeeded(v) | Called::Pending(v) => Ok(v),
    }
}

fn diff<'a>(out: &'a Value, id: &str) -> &'a Value {
    out["slots"][0]["releases"].as_array().unwrap().iter().find(|r| r["releaseId"] == id).unwrap()
}

#[test]
fn narrowing_to_blu_ray_rejects_the_web_release_and_moves_the_preference() {
    install(Some(json!({"preferredResolutions": ["2160p", "1080p"]})));
    let out = call(json!({"name": "quality.movies", "body": {"preferredResolutions": ["2160p", "1080p"], "allowedSources": ["Blu-ray"]}})).unwrap();
    assert_eq!(out["currentRevision"], 1);
    let slot = &out["slots"][0];
    assert_eq!((slot["currentPreferred"].as_str(), slot["proposedPreferred"].as_str()), (Some("r-uhd"), Some("r-hd")));
    assert_eq!(slot["preferredChanged"], true);
    let uhd = diff(&out, "r-uhd");
    assert_eq!(uhd["change"], "becomes-rejected");
    assert_eq!(uhd["proposed"]["reasons"], json!(["source Web is not allowed"]));
    assert_eq!(diff(&out, "r-hd")["change"], "still-acceptable");
    assert_eq!(out["summary"]["becomeRejected"], 1);
}

#[test]
fn without_a_published_revision_everything_counts_as_acceptable_today() {
    install(None);
    let out = call(json!({"name": "quality.movies", "body": {"preferredResolutions": ["1080p"], "maxSizeMb": 15000}}))
        .unwrap();
    assert!(out["currentRevision"].is_null());
    assert!(out["note"].as_str().unwrap().contains("no revision is published"));
    assert_eq!(diff(&out, "r-uhd")["change"], "becomes-rejected");
    assert_eq!(diff(&out, "r-hd")["change"], "still-acceptable");
    assert_eq!(out["slots"][0]["proposedPreferred"], "r-hd");
}

#[test]
fn a_bad_body_is_invalid_input() {
    install(None);
    let bad = |body: Value| call(json!({"name": "quality.movies", "body": body}));
    assert!(matches!(bad(json!({"preferredResolutions": []})), Err(Failure::InvalidInput(_))));
    assert!(matches!(bad(json!({"preferredResolutions": ["8k"]})), Err(Failure::InvalidInput(_))));
    assert!(matches!(
        bad(json!({"preferredResolutions": ["1080p"], "minSizeMb": 10, "maxSizeMb": 1})),
        Err(Failure::InvalidInput(_))
    ));
    assert!(matches!(bad(json!({"preferredResolutions": ["1080p"], "colour": "red"})), Err(Failure::InvalidInput(_))));
    assert!(matches!(
        call(json!({"name": "Bad Name", "body": {"preferredResolutions": ["1080p"]}})),
        Err(Failure::InvalidInput(_))
    ));
}

#[test]
fn a_season_slot_weighs_only_releases_that_may_hold_its_season() {
    MockHost::new("policy.preview")
        .with_grant(Class::Preview)
        .with_domain(|_, name, _| match name {
            "policy.get" => Err(HostError::NotFound("no published policy".into())),
            "slots.list" => Ok(json!([Slot { season: Some(2), ..records::slot("s2", "m1") }])),
            "entity.get" => {
                Ok(json!(Entity { kind: capstan_sdk::contract::status::EntityKind::Tv, ..records::entity("m1") }))
            }
            "releases.for-entity" => Ok(json!([
                SourceRelease { parsed: json!({"season": 1}), ..records::release("r-s1", "Show.S01.1080p.WEB-DL") },
                SourceRelease {
                    parsed: json!({"seasons": [1, 2]}),
                    ..records::release("r-pack", "Show.S01-S02.1080p.WEB-DL")
                },
                records::release("r-complete", "Show.Complete.1080p.WEB-DL"),
            ])),
            other => panic!("unexpected query {other}"),
        })
        .install();
    let out = call(json!({"name": "quality.tv", "body": {"preferredResolutions": ["1080p"]}})).unwrap();
    let slot = &out["slots"][0];
    assert_eq!(slot["season"], 2);
    let ids: Vec<&str> =
        slot["releases"].as_array().unwrap().iter().map(|r| r["releaseId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["r-pack", "r-complete"]);
}
