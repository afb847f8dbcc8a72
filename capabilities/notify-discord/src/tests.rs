//! `notify.discord` against the mock host: one embed posted to the
//! webhook's own URL, no mentions; Discord's rate limit is worth trying
//! again, an unknown webhook says to paste it again.

use capstan_sdk::host::Response;
use capstan_sdk::testing::{Called, MockHost, descriptor, invoke};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::NotifyDiscord;

fn install(status: u16, answer: &str) {
    let answer = answer.to_string();
    MockHost::new("notify.discord")
        .with_service("discord", move |_req| {
            Ok::<_, HostError>(Response { status, headers: Vec::new(), body: answer.clone().into_bytes() })
        })
        .install();
}

fn message(kind: &str) -> Value {
    let events = json!([{"kind": kind, "title": "Dune: Part Two (2024)", "at": 1}]);
    json!({"title": "Capstan: @everyone imported", "message": "Imported Dune: Part Two (2024)", "events": events})
}

fn sent() -> Vec<Value> {
    MockHost::take()
        .unwrap()
        .requests
        .into_iter()
        .map(|r| {
            assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/"), "the webhook's URL is the host's");
            serde_json::from_slice(&r.body.unwrap()).unwrap()
        })
        .collect()
}

#[test]
fn one_embed_goes_to_the_webhook_and_mentions_nobody() {
    install(204, "");
    let Called::Succeeded(out) = invoke::<NotifyDiscord>(message("imported")).unwrap() else { panic!() };
    assert_eq!(out, json!({"target": "discord", "status": 204}));
    let body = &sent()[0];
    assert_eq!(body["embeds"][0]["title"], "Capstan: @everyone imported");
    assert_eq!(body["embeds"][0]["description"], "Imported Dune: Part Two (2024)");
    assert_eq!(body["allowed_mentions"], json!({"parse": []}), "a title never pings anyone");
    install(204, "");
    invoke::<NotifyDiscord>(message("download-failed")).unwrap();
    assert_ne!(sent()[0]["embeds"][0]["color"], body["embeds"][0]["color"], "a failure stands out");
}

#[test]
fn a_rate_limit_is_tried_again_and_an_unknown_webhook_is_said() {
    install(429, r#"{"message": "You are being rate limited.", "retry_after": 1.5, "global": false}"#);
    let Err(Failure::Unavailable(m)) = invoke::<NotifyDiscord>(message("grabbed")) else { panic!() };
    assert!(m.contains("1.5 s"), "{m}");
    install(404, r#"{"message": "Unknown Webhook", "code": 10015}"#);
    let Err(Failure::Denied(m)) = invoke::<NotifyDiscord>(message("grabbed")) else { panic!() };
    assert!(m.contains("Unknown Webhook") && m.contains("paste it again"), "{m}");
    install(400, r#"{"embeds": ["0"], "message": "Invalid Form Body", "code": 50035}"#);
    assert!(matches!(invoke::<NotifyDiscord>(message("grabbed")), Err(Failure::InvalidInput(_))));
    install(204, "");
    let empty = json!({"title": "Capstan", "message": "", "events": []});
    assert!(matches!(invoke::<NotifyDiscord>(empty), Err(Failure::InvalidInput(_))));
    assert!(sent().is_empty());
}

#[test]
fn the_descriptor_sends_through_the_discord_service() {
    let d = descriptor::<NotifyDiscord>();
    assert_eq!((d.id.as_str(), d.services.as_slice()), ("notify.discord", ["discord".to_string()].as_slice()));
}
