//! Native tests through the SDK's mock host.

use capstan_sdk::contract::ops::transitions::PolicyPublish;
use capstan_sdk::contract::records::Policy;
use capstan_sdk::testing::{Called, MockHost, invoke, records};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::PolicyApply;

fn install() {
    MockHost::new("policy.apply")
        .with_domain(|iface, name, arg| {
            assert_eq!((iface, name), ("records", "policy.publish"));
            let PolicyPublish { name, revision } = serde_json::from_value(arg.clone()).unwrap();
            match (name.as_str(), revision) {
                ("quality.movies", 2) => {
                    let body = json!({"preferredResolutions": ["2160p"]});
                    Ok(json!(Policy { revision: 2, ..records::policy("quality.movies", body) }))
                }
                (name, rev) => Err(HostError::NotFound(format!("no policy revision {name:?}@{rev}"))),
            }
        })
        .install();
}

fn call(input: Value) -> Result<Value, Failure> {
    match invoke::<PolicyApply>(input)? {
        Called::Succeeded(v) | Called::Pending(v) => Ok(v),
    }
}

#[test]
fn a_draft_revision_is_published() {
    install();
    let out = call(json!({"name": "quality.movies", "revision": 2})).unwrap();
    assert_eq!((out["status"].as_str(), out["revision"].as_i64()), (Some("published"), Some(2)));
    assert_eq!(out["body"]["preferredResolutions"], json!(["2160p"]));
}

#[test]
fn unknown_revisions_and_bad_input_are_refused() {
    install();
    assert!(matches!(call(json!({"name": "quality.movies", "revision": 9})), Err(Failure::NotFound(_))));
    assert!(matches!(call(json!({"name": "quality.movies", "revision": 0})), Err(Failure::InvalidInput(_))));
    assert!(matches!(call(json!({"name": "quality.movies"})), Err(Failure::InvalidInput(_))));
}
