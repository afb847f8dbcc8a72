//! `notify.ntfy` against the mock host: one JSON publish to the server's
//! root with the topic, title, message, tags and priority; a topic the
//! setting does not name well, or an empty message, sends nothing; ntfy's
//! rate limit and server errors are worth trying again, its refusals not.

use capstan_sdk::host::Response;
use capstan_sdk::testing::{Called, MockHost, descriptor, invoke};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::NotifyNtfy;

fn install(topic: Option<&str>, status: u16) {
    let mut mock = MockHost::new("notify.ntfy").with_service("ntfy", move |_req| {
        let headers = if status == 429 { vec![("Retry-After".into(), "30".into())] } else { Vec::new() };
        Ok::<_, HostError>(Response { status, headers, body: br#"{"error":"limit reached"}"#.to_vec() })
    });
    if let Some(topic) = topic {
        mock = mock.with_setting("topic", topic);
    }
    mock.install();
}

fn message(kinds: &[&str]) -> Value {
    let events: Vec<Value> =
        kinds.iter().map(|k| json!({"kind": k, "title": "Dune: Part Two (2024)", "at": 1})).collect();
    json!({"title": "Capstan: 2 imported · Dune", "message": "Imported Dune: Part Two (2024)", "events": events})
}

fn sent() -> Vec<Value> {
    MockHost::take()
        .unwrap()
        .requests
        .into_iter()
        .map(|r| {
            assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/"));
            serde_json::from_slice(&r.body.unwrap()).unwrap()
        })
        .collect()
}

#[test]
fn one_json_publish_carries_topic_title_tags_and_priority() {
    install(Some("capstan-home"), 200);
    let Called::Succeeded(out) = invoke::<NotifyNtfy>(message(&["imported", "download-failed", "imported"])).unwrap()
    else {
        panic!()
    };
    assert_eq!(out, json!({"topic": "capstan-home", "status": 200}));
    let body = &sent()[0];
    assert_eq!(body["topic"], "capstan-home");
    assert_eq!(body["title"], "Capstan: 2 imported · Dune", "any language, no header encoding");
    assert_eq!(body["tags"], json!(["inbox_tray", "warning"]));
    assert_eq!(body["priority"], 4, "a failure asks for a person");
}

#[test]
fn a_bad_topic_or_an_empty_message_sends_nothing() {
    for topic in [None, Some(""), Some("no spaces"), Some("../x")] {
        install(topic, 200);
        assert!(matches!(invoke::<NotifyNtfy>(message(&["imported"])), Err(Failure::InvalidInput(_))), "{topic:?}");
        assert!(sent().is_empty());
    }
    install(Some("capstan"), 200);
    let empty = json!({"title": "Capstan", "message": "  ", "events": []});
    assert!(matches!(invoke::<NotifyNtfy>(empty), Err(Failure::InvalidInput(_))));
    assert!(sent().is_empty());
}

#[test]
fn a_rate_limit_is_tried_again_and_a_refusal_is_not() {
    install(Some("capstan"), 429);
    let Err(Failure::Unavailable(m)) = invoke::<NotifyNtfy>(message(&["grabbed"])) else { panic!() };
    assert!(m.contains("429") && m.contains("30 s"), "{m}");
    install(Some("capstan"), 403);
    assert!(matches!(invoke::<NotifyNtfy>(message(&["grabbed"])), Err(Failure::Denied(_))));
}

#[test]
fn the_descriptor_sends_through_the_ntfy_service() {
    let d = descriptor::<NotifyNtfy>();
    assert_eq!(d.id, "notify.ntfy");
    assert!(d.input_schema.contains("events"));
}
