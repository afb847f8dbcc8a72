//! Native tests through the SDK's mock host: a small library of entities,
//! a release, and the drafts the capability records.

use std::cell::RefCell;
use std::rc::Rc;

use capstan_sdk::Failure;
use capstan_sdk::HostError;
use capstan_sdk::contract::ops::drafts::{IdentityMatch, OpenDecision};
use capstan_sdk::contract::ops::queries::ByKind;
use capstan_sdk::contract::records::{Entity, SourceRelease};
use capstan_sdk::contract::status::{DecisionStatus, IdentityStatus};
use capstan_sdk::testing::{Called, Class, MockHost, descriptor, invoke, records};
use serde_json::{Value, json};

use crate::IdentityResolve;

type Drafts = Rc<RefCell<Vec<(String, Value)>>>;

/// What the store answers a draft: the release as now identified, or the
/// outline of the decision opened (what a component sees).
fn drafted(release: &SourceRelease, kind: &str, arg: &Value) -> Value {
    match kind {
        "identity-match" => {
            let m: IdentityMatch = serde_json::from_value(arg.clone()).unwrap();
            assert_eq!(m.release_id, release.id);
            json!(SourceRelease {
                entity_id: m.entity_id,
                identity_status: m.status,
                evidence: Some(m.evidence),
                ..release.clone()
            })
        }
        "decision" => {
            let d: OpenDecision = serde_json::from_value(arg.clone()).unwrap();
            let outline = json!({
                "id": "dec-1",
                "kind": d.kind,
                "subject": d.subject,
                "status": DecisionStatus::Open,
                "dedupeKey": d.dedupe_key,
            });
            json!({ "decision": outline, "created": true })
        }
        other => panic!("unexpected draft {other}"),
    }
}

fn library(release: SourceRelease, entities: Vec<Entity>) -> Drafts {
    let drafts: Drafts = Rc::default();
    let seen = drafts.clone();
    MockHost::new("identity.resolve")
        .with_grant(Class::Propose)
        .with_domain(move |iface, name, arg| match (iface, name) {
            ("library", "release.get") if arg["id"] == release.id.as_str() => Ok(json!(release)),
            ("library", "release.get") => Err(HostError::NotFound(format!("no source release {}", arg["id"]))),
            ("library", "entities.list") => {
                let ByKind { kind, limit } = serde_json::from_value(arg.clone()).unwrap();
                assert_eq!(limit, 1000);
                Ok(json!(entities.iter().filter(|e| kind.as_ref().is_none_or(|k| *k == e.kind)).collect::<Vec<_>>()))
            }
            ("library", "entity.get") => entities
                .iter()
                .find(|e| arg["id"] == e.id.as_str())
                .map(|e| json!(e))
                .ok_or_else(|| HostError::NotFound("no entity".into())),
            ("drafts", kind) => {
                seen.borrow_mut().push((kind.to_string(), arg.clone()));
                Ok(drafted(&release, kind, arg))
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

fn movie(id: &str, title: &str, year: i64) -> Entity {
    Entity { title: title.into(), year: Some(year), ..records::entity(id) }
}

fn dunes() -> Vec<Entity> {
    vec![movie("e-2024", "Dune: Part Two", 2024), movie("e-2021", "Dune", 2021)]
}

#[test]
fn an_unparsed_release_is_parsed_and_resolved_to_the_one_clear_match() {
    let release = records::release("r1", "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX");
    let drafts = library(release, dunes());
    let out = call(json!({"sourceReleaseId": "r1"})).unwrap();
    assert_eq!(out["status"], "resolved", "{out}");
    assert_eq!(out["entityId"], "e-2024");
    assert_eq!(out["score"], 1.0);
    assert_eq!(out["evidence"]["matched"], json!(["title", "year", "kind"]));
    assert_eq!(out["evidence"]["release"]["title"], "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX");
    let drafts = drafts.borrow();
    assert_eq!(drafts.len(), 1, "one identity match, no decision");
    assert_eq!(drafts[0].0, "identity-match");
    let m: IdentityMatch = serde_json::from_value(drafts[0].1.clone()).unwrap();
    assert_eq!(m.status, IdentityStatus::Resolved);
    assert_eq!(m.entity_id.as_deref(), Some("e-2024"));
    assert_eq!(m.evidence, out["evidence"]);
}

#[test]
fn two_remakes_without_a_year_open_a_decision_instead_of_guessing() {
    let entities = vec![
        movie("lk-1994", "The Lion King", 1994),
        movie("lk-2019", "The Lion King", 2019),
        movie("other", "Aladdin", 2019),
    ];
    let release = records::release("r2", "The.Lion.King.1080p.BluRay.x264-GRP");
    let drafts = library(release, entities);
    let out = call(json!({"sourceReleaseId": "r2"})).unwrap();
    assert_eq!(out["status"], "ambiguous", "{out}");
    assert_eq!(out["decisionId"], "dec-1");
    assert!(out.get("entityId").is_none());
    let drafts = drafts.borrow();
    assert_eq!(drafts.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["identity-match", "decision"]);
    let m: IdentityMatch = serde_json::from_value(drafts[0].1.clone()).unwrap();
    assert_eq!((m.status, m.entity_id), (IdentityStatus::Ambiguous, None));
    let decision: OpenDecision = serde_json::from_value(drafts[1].1.clone()).unwrap();
    assert_eq!(decision.kind, "identity_ambiguous");
    assert_eq!(decision.subject.as_deref(), Some("r2"));
    assert_eq!(decision.dedupe_key, "identity_ambiguous:r2");
    assert_eq!(decision.evidence, out["evidence"]);
    let options: Vec<&str> = decision.options.as_array().unwrap().iter().map(|o| o["id"].as_str().unwrap()).collect();
    assert_eq!(options, ["entity:lk-1994", "entity:lk-2019", "none"], "only the close candidates are options");
    let pick = &decision.options[1];
    assert_eq!(pick["label"], "The Lion King (2019)");
    assert_eq!(pick["capabilityId"], "identity.resolve");
    assert_eq!(pick["input"], json!({"sourceReleaseId": "r2", "candidates": [{"entityId": "lk-2019"}]}));
    assert_eq!(decision.options[2]["action"], "dismiss");
}

#[test]
fn named_candidates_are_the_only_ones_scored_and_an_episode_looks_only_at_series() {
    let entities = vec![
        movie("lk-1994", "The Lion King", 1994),
        movie("lk-2019", "The Lion King", 2019),
        Entity {
            kind: capstan_sdk::contract::status::EntityKind::Tv,
            title: "Shōgun".into(),
            year: Some(2024),
            ..records::entity("shogun")
        },
    ];
    let release = records::release("r2", "The.Lion.King.1080p.BluRay.x264-GRP");
    let drafts = library(release, entities.clone());
    let out = call(json!({"sourceReleaseId": "r2", "candidates": [{"entityId": "lk-2019"}]})).unwrap();
    assert_eq!((out["status"].as_str(), out["entityId"].as_str()), (Some("resolved"), Some("lk-2019")), "{out}");
    assert_eq!(out["evidence"]["candidates"].as_array().unwrap().len(), 1);
    assert_eq!(drafts.borrow().len(), 1);

    let release = records::release("r4", "Shogun.2024.S01E03.1080p.WEB.h264-GRP");
    library(release, entities);
    let out = call(json!({"sourceReleaseId": "r4"})).unwrap();
    assert_eq!((out["status"].as_str(), out["entityId"].as_str()), (Some("resolved"), Some("shogun")), "{out}");
    let scored: Vec<&str> =
        out["evidence"]["candidates"].as_array().unwrap().iter().map(|c| c["entityId"].as_str().unwrap()).collect();
    assert_eq!(scored, ["shogun"], "only series are listed for an episode");
    assert!(matches!(
        call(json!({"sourceReleaseId": "r4", "candidates": [{"entityId": "gone"}]})),
        Err(Failure::NotFound(_))
    ));
}

#[test]
fn stored_parsed_fields_are_used_and_an_unknown_title_records_nothing() {
    let release = SourceRelease {
        parsed: json!({"title": "Oppenheimer", "year": 2023}),
        ..records::release("r3", "whatever.mkv")
    };
    let drafts = library(release, dunes());
    let out = call(json!({"sourceReleaseId": "r3"})).unwrap();
    assert_eq!(out["status"], "unmatched");
    assert_eq!(out["evidence"]["release"]["parsed"]["title"], "Oppenheimer");
    assert!(drafts.borrow().is_empty());
}

#[test]
fn bad_input_is_refused_clearly() {
    library(records::release("r1", "x"), dunes());
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
