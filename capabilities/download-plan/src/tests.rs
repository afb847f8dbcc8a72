//! `download.plan` against the mock host: what it asks the domain store,
//! what it reports back, and that the store's refusals reach the caller
//! as the same kind of failure.

use capstan_sdk::HostError;
use capstan_sdk::contract::ops::drafts::NewPlan;
use capstan_sdk::contract::records::Plan;
use capstan_sdk::contract::status::PlanStatus;
use capstan_sdk::testing::{Called, Class, MockHost, descriptor, invoke, records};
use serde_json::{Value, json};

use crate::DownloadPlan;

fn plan_record() -> Value {
    let payload = json!({"title": "Dune.Part.Two.2024.2160p", "infohash": "ab".repeat(20)});
    json!(Plan {
        slot_id: "slot-1".into(),
        source_release_id: "rel-1".into(),
        status: PlanStatus::Draft,
        payload_hash: "h1".into(),
        slot_revision: 3,
        created_by: "cli:op".into(),
        ..records::plan("plan-1", payload)
    })
}

#[test]
fn drafts_an_acquisition_plan_and_reports_what_an_approval_binds_to() {
    MockHost::new("download.plan")
        .with_grant(Class::Propose)
        .with_domain(|iface, name, arg| {
            assert_eq!((iface, name), ("drafts", "acquisition-plan"));
            let asked: NewPlan = serde_json::from_value(arg.clone()).unwrap();
            let wanted = NewPlan { slot_id: "slot-1".into(), source_release_id: "rel-1".into(), note: None };
            assert_eq!(asked, wanted, "trimmed ids, no note");
            Ok(plan_record())
        })
        .install();
    let out = invoke::<DownloadPlan>(json!({"sourceReleaseId": " rel-1 ", "slotId": "slot-1"})).unwrap();
    let Called::Succeeded(out) = out else { panic!("{out:?}") };
    assert_eq!(out["id"], "plan-1");
    assert_eq!(out["status"], "draft");
    assert_eq!((out["revision"].as_i64(), out["payloadHash"].as_str()), (Some(1), Some("h1")));
    assert_eq!(out["infohash"], "ab".repeat(20));
}

#[test]
fn the_store_s_refusals_keep_their_kind() {
    for (error, kind) in [
        (HostError::Conflict("release rel-1 has identity unresolved; resolve it before planning".into()), "conflict"),
        (HostError::NotFound("no slot slot-9".into()), "not found"),
    ] {
        let answer = error.clone();
        MockHost::new("download.plan").with_domain(move |_, _, _| Err(answer.clone())).install();
        let failure = invoke::<DownloadPlan>(json!({"sourceReleaseId": "rel-1", "slotId": "slot-9"})).unwrap_err();
        assert!(failure.to_string().starts_with(kind), "{failure}");
    }
}

#[test]
fn empty_ids_and_unknown_fields_are_refused_before_asking() {
    MockHost::new("download.plan").with_domain(|_, _, _| panic!("nothing should be asked")).install();
    for input in [
        json!({"sourceReleaseId": "  ", "slotId": "slot-1"}),
        json!({"sourceReleaseId": "rel-1"}),
        json!({"sourceReleaseId": "rel-1", "slotId": "slot-1", "submit": true}),
    ] {
        let failure = invoke::<DownloadPlan>(input.clone()).unwrap_err();
        assert!(failure.to_string().starts_with("invalid input"), "{input}: {failure}");
    }
}

#[test]
fn a_propose_label_that_reserves_nothing() {
    let d = descriptor::<DownloadPlan>();
    assert_eq!(d.id, "download.plan");
    assert!(d.tags.iter().any(|t| t == "policy.acquisition"));
    assert!(d.aliases.iter().any(|a| a == "计划下载"));
    assert!(d.services.is_empty(), "planning talks to no outside service");
}
