//! `notify.webhook` against the mock host: the message as one JSON body
//! POSTed to the path the setting names; a webhook that refuses it says
//! what it answered, and one that is down or rate limiting is tried again.

use capstan_sdk::host::Response;
use capstan_sdk::testing::{Called, MockHost, descriptor, invoke};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::NotifyWebhook;

fn install(path: Option<&str>, status: u16) {
    let mut mock = MockHost::new("notify.webhook").with_service("webhook", move |_req| {
        Ok::<_, HostError>(Response { status, headers: Vec::new(), body: b"no such hook".to_vec() })
    });
    if let Some(path) = path {
        mock = mock.with_setting("path", path);
    }
    mock.install();
}

fn message() -> Value {
    json!({"title": "Capstan: imported", "message": "Imported Dune (2021)",
        "events": [{"kind": "imported", "title": "Dune (2021)", "detail": "WEBDL-1080p", "at": 5}]})
}

#[test]
fn the_message_is_one_json_body_at_the_configured_path() {
    install(Some("/hooks/capstan"), 204);
    let Called::Succeeded(out) = invoke::<NotifyWebhook>(message()).unwrap() else { panic!() };
    assert_eq!(out, json!({"target": "webhook", "status": 204}));
    let sent = MockHost::take().unwrap().requests;
    assert_eq!((sent[0].method.as_str(), sent[0].path.as_str()), ("POST", "/hooks/capstan"));
    let body: Value = serde_json::from_slice(sent[0].body.as_ref().unwrap()).unwrap();
    assert_eq!(body["source"], "capstan");
    assert_eq!(
        body["events"][0],
        json!({"kind": "imported", "title": "Dune (2021)", "detail": "WEBDL-1080p", "at": 5})
    );
}

#[test]
fn a_refusal_says_what_the_webhook_answered_and_a_failure_is_tried_again() {
    install(None, 404);
    let Err(Failure::InvalidInput(m)) = invoke::<NotifyWebhook>(message()) else { panic!() };
    assert!(m.contains("404") && m.contains("no such hook"), "{m}");
    assert_eq!(MockHost::take().unwrap().requests[0].path, "/", "the root when no path is set");
    install(None, 502);
    assert!(matches!(invoke::<NotifyWebhook>(message()), Err(Failure::Unavailable(_))));
}

#[test]
fn the_descriptor_sends_through_the_webhook_service() {
    assert_eq!(descriptor::<NotifyWebhook>().id, "notify.webhook");
}
