//! `notify.telegram` against the mock host: one `sendMessage` with the
//! chat and the plain text; a chat id the setting does not name well sends
//! nothing; Telegram's description says why it refused, and its rate
//! limit is worth trying again.

use capstan_sdk::host::Response;
use capstan_sdk::testing::{Called, MockHost, descriptor, invoke};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::NotifyTelegram;

fn install(chat: Option<&str>, status: u16, answer: Value) {
    let mut mock = MockHost::new("notify.telegram").with_service("telegram", move |_req| {
        Ok::<_, HostError>(Response { status, headers: Vec::new(), body: answer.to_string().into_bytes() })
    });
    if let Some(chat) = chat {
        mock = mock.with_setting("chat_id", chat);
    }
    mock.install();
}

fn message() -> Value {
    let events = json!([{"kind": "imported", "title": "Dune: Part Two (2024)", "at": 1}]);
    json!({"title": "Capstan: imported Dune", "message": "Imported Dune: Part Two (2024)", "events": events})
}

fn sent() -> Vec<Value> {
    MockHost::take()
        .unwrap()
        .requests
        .into_iter()
        .map(|r| {
            assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/sendMessage"), "the token is the host's");
            serde_json::from_slice(&r.body.unwrap()).unwrap()
        })
        .collect()
}

#[test]
fn one_send_message_carries_the_chat_and_the_text() {
    install(Some("-1001234567890"), 200, json!({"ok": true, "result": {"message_id": 42, "chat": {"id": 1}}}));
    let Called::Succeeded(out) = invoke::<NotifyTelegram>(message()).unwrap() else { panic!() };
    assert_eq!(out, json!({"chatId": "-1001234567890", "messageId": 42}));
    let body = &sent()[0];
    assert_eq!(body["chat_id"], "-1001234567890");
    assert_eq!(body["text"], "Capstan: imported Dune\n\nImported Dune: Part Two (2024)");
    assert!(body.get("parse_mode").is_none(), "plain text: nothing to escape");
}

#[test]
fn a_chat_id_telegram_cannot_take_sends_nothing() {
    for chat in [None, Some(""), Some("my chat"), Some("@abc"), Some("12a"), Some("../bot")] {
        install(chat, 200, json!({"ok": true}));
        assert!(matches!(invoke::<NotifyTelegram>(message()), Err(Failure::InvalidInput(_))), "{chat:?}");
        assert!(sent().is_empty());
    }
    install(Some("@capstan_news"), 200, json!({"ok": true, "result": {"message_id": 1}}));
    assert!(invoke::<NotifyTelegram>(message()).is_ok());
}

#[test]
fn telegrams_description_says_why_and_a_rate_limit_is_tried_again() {
    let refused = json!({"ok": false, "error_code": 400, "description": "Bad Request: chat not found"});
    install(Some("123456789"), 400, refused);
    let Err(Failure::InvalidInput(m)) = invoke::<NotifyTelegram>(message()) else { panic!() };
    assert!(m.contains("chat not found"), "{m}");
    install(Some("123456789"), 401, json!({"ok": false, "error_code": 401, "description": "Unauthorized"}));
    assert!(matches!(invoke::<NotifyTelegram>(message()), Err(Failure::Denied(_))));
    let limited = json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 7",
        "parameters": {"retry_after": 7}});
    install(Some("123456789"), 429, limited);
    let Err(Failure::Unavailable(m)) = invoke::<NotifyTelegram>(message()) else { panic!() };
    assert!(m.contains("7 s"), "{m}");
    install(Some("123456789"), 200, json!({"ok": false, "description": "nonsense"}));
    assert!(matches!(invoke::<NotifyTelegram>(message()), Err(Failure::Unavailable(_))), "a 200 that is not ok");
}

#[test]
fn the_descriptor_sends_through_the_telegram_service() {
    let d = descriptor::<NotifyTelegram>();
    assert_eq!((d.id.as_str(), d.services.as_slice()), ("notify.telegram", ["telegram".to_string()].as_slice()));
}
