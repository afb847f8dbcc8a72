//! Native tests through the SDK's mock host: a small library of entities,
//! a release, and the drafts the capability records.

use std::cell::RefCell;
use std::rc::Rc;

use capstan_sdk::Failure;
use capstan_sdk::HostError;
use capstan_sdk::testing::{Called, Class, MockHost, descriptor, invoke};
use serde_json::{Value, json};

use crate::IdentityResolve;

type Drafts = Rc<RefCell<Vec<(String, Value)>>>;

fn library(release: Value, entities: Value) -> Drafts {
    let drafts: Drafts = Rc::default();
    let seen = drafts.clone();
    MockHost::new("identity.resolve")
        .with_grant(Class::Propose)
        .with_domain(move |iface, name, arg| match (iface, name) {
            ("library", "release.get") if arg["id"] == release["id"] => Ok(release.clone()),
            ("library", "release.get") => Err(HostError::NotFound(format!("no source release {}", arg["id"]))),
            ("library", "entities.list") => Ok(entities.clone()),
            ("library", "entity.get") => entities
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["id"] == arg["id"])
                .cloned()
                .ok_or_else(|| HostError::NotFound("no entity".into())),
            ("drafts", kind) => {
                seen.borrow_mut().push((kind.to_string(), arg.clone()));
                Ok(json!({ "decision": { "id": "dec-1" }, "created": true }))
            }
            other => panic!("unexpected call {other:?}"),
        })
        .install();
    drafts
}

fn call(input: Value) -> Result<Value, Failure> {
    match invoke::<IdentityResolve>(input)? {
        Called::Succeeded(v) => Ok(v),
        Called::Pending(v) => panic!("never pending: {v}"),
    }
}

fn dunes() -> Value {
    json!([
        {"id": "e-2024", "kind": "movie", "title": "Dune: Part Two", "originalTitle": null, "year": 2024},
        {"id": "e-2021", "kind": "movie", "title": "Dune", "originalTitle": null, "year": 2021},
    ])
}

#[test]
fn an_unparsed_release_is_parsed_and_resolved_to_the_one_clear_match() {
    let release = json!({"id": "r1", "title": "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX", "parsed": {}});
    let drafts = library(release, dunes());
    let out = call(json!({"sourceReleaseId": "r1"})).unwrap();
    assert_eq!(out["status"], "resolved", "{out}");
    assert_eq!(out["entityId"], "e-2024");
    assert_eq!(out["score"], 1.0);
    assert_eq!(out["evidence"]["matched"], json!(["title", "year", "kind"]));
    let drafts = drafts.borrow();
    assert_eq!(drafts.len(), 1, "one identity match, no decision");
    assert_eq!(drafts[0].0, "identity-match");
    assert_eq!(drafts[0].1["status"], "resolved");
    assert_eq!(drafts[0].1["entityId"], "e-2024");
}

#[test]
fn two_remakes_without_a_year_open_a_decision_instead_of_guessing() {
    let entities = json!([
        {"id": "lk-1994", "kind": "movie", "title": "The Lion King", "year": 1994},
        {"id": "lk-2019", "kind": "movie", "title": "The Lion King", "year": 2019},
        {"id": "other", "kind": "movie", "title": "Aladdin", "year": 2019},
    ]);
    let release = json!({"id": "r2", "title": "The.Lion.King.1080p.BluRay.x264-GRP", "parsed": {}});
    let drafts = library(release, entities);
    let out = call(json!({"sourceReleaseId": "r2"})).unwrap();
    assert_eq!(out["status"], "ambiguous", "{out}");
    assert_eq!(out["decisionId"], "dec-1");
    assert!(out.get("entityId").is_none());
    let drafts = drafts.borrow();
    assert_eq!(drafts.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["identity-match", "decision"]);
    let decision = &drafts[1].1;
    assert_eq!(decision["kind"], "identity_ambiguous");
    assert_eq!(decision["subject"], "r2");
    assert_eq!(decision["dedupeKey"], "identity_ambiguous:r2");
    let options: Vec<&str> =
        decision["options"].as_array().unwrap().iter().map(|o| o["id"].as_str().unwrap()).collect();
    assert_eq!(options, ["entity:lk-1994", "entity:lk-2019", "none"], "only the close candidates are options");
    let pick = &decision["options"][1];
    assert_eq!(pick["label"], "The Lion King (2019)");
    assert_eq!(pick["capabilityId"], "identity.resolve");
    assert_eq!(pick["input"], json!({"sourceReleaseId": "r2", "candidates": [{"entityId": "lk-2019"}]}));
    assert_eq!(decision["options"][2]["action"], "dismiss");
}

#[test]
fn stored_parsed_fields_are_used_and_an_unknown_title_records_nothing() {
    let release = json!({"id": "r3", "title": "whatever.mkv", "parsed": {"title": "Oppenheimer", "year": 2023}});
    let drafts = library(release, dunes());
    let out = call(json!({"sourceReleaseId": "r3"})).unwrap();
    assert_eq!(out["status"], "unmatched");
    assert_eq!(out["evidence"]["release"]["parsed"]["title"], "Oppenheimer");
    assert!(drafts.borrow().is_empty());
}

#[test]
fn bad_input_is_refused_clearly() {
    library(json!({"id": "r1", "title": "x", "parsed": {}}), dunes());
    assert!(matches!(call(json!({"sourceReleaseId": " "})), Err(Failure::InvalidInput(_))));
    assert!(matches!(call(json!({"sourceReleaseId": "r1", "candidates": []})), Err(Failure::InvalidInput(_))));
    assert!(matches!(call(json!({"sourceReleaseId": "r1", "extra": 1})), Err(Failure::InvalidInput(_))));
    assert!(matches!(call(json!({"sourceReleaseId": "nope"})), Err(Failure::NotFound(_))));
}

#[test]
fn the_descriptor_says_propose_with_both_languages() {
    let d = descriptor::<IdentityResolve>();
    assert_eq!(d.id, "identity.resolve");
    assert!(d.aliases.iter().any(|a| a == "match release") && d.aliases.iter().any(|a| a == "识别身份"));
    assert!(d.input_schema.contains("\"additionalProperties\":false"), "{}", d.input_schema);
}
