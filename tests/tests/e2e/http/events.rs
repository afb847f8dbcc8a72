//! The global event log over HTTP: JSON pages for pollers, and a
//! Server-Sent Events stream that a client can drop and resume from
//! `Last-Event-ID` without missing or repeating an event.

use std::time::Duration;

use capstan::runtime::EffectClass;
use capstan_tests::api::serve;
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use crate::storage::ledger::env;

/// Reads Server-Sent Events off a streaming response.
pub(crate) struct SseReader {
    pub(crate) resp: reqwest::Response,
    pub(crate) buffer: String,
}

impl SseReader {
    /// The next event's (id, kind, data); heartbeat comments are skipped.
    pub(crate) async fn next(&mut self) -> (i64, String, Value) {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut id, mut kind, mut data) = (None, String::new(), String::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = v.trim().parse().ok();
                    } else if let Some(v) = line.strip_prefix("event:") {
                        kind = v.trim().to_string();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim());
                    }
                }
                if let Some(id) = id {
                    return (id, kind, serde_json::from_str(&data).unwrap());
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(20), self.resp.chunk())
                .await
                .expect("an event within 20 s")
                .unwrap()
                .expect("the stream stays open");
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

async fn a_dropped_stream_resumes_without_gap_or_duplicate(backend: Backend) {
    let env = env(backend).await;
    let base = serve(env.app.clone()).await;
    let key = capstan::http::keys::create(&env.db, "watcher", &[EffectClass::Read], "test").await.unwrap();
    let http = reqwest::Client::new();
    let events = env.svc.events.clone();
    let publish = |n: i64| {
        let events = events.clone();
        async move { events.publish("test.tick", Some("ticker"), &json!({ "n": n })).await.unwrap() }
    };
    let first = events.head().await.unwrap() + 1;
    for n in 1..=3 {
        publish(n).await;
    }

    // A poller pages through them.
    let page: Value = http
        .get(format!("{base}/events?after={}&limit=2", first - 1))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ns: Vec<i64> = page["events"].as_array().unwrap().iter().map(|e| e["payload"]["n"].as_i64().unwrap()).collect();
    assert_eq!(ns, vec![1, 2]);
    assert_eq!(page["next"], first + 1);
    let resp = http.get(format!("{base}/events?limit=0")).bearer_auth(&key).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 400);

    // A stream from the start sees the backlog, then live events.
    let open = |resume: Option<i64>| {
        let mut req = http
            .get(format!("{base}/events?after={}", first - 1))
            .bearer_auth(&key)
            .header("accept", "text/event-stream");
        if let Some(seq) = resume {
            req = req.header("last-event-id", seq.to_string());
        }
        req.send()
    };
    let resp = open(None).await.unwrap();
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let mut reader = SseReader { resp, buffer: String::new() };
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(reader.next().await);
    }
    for n in 4..=5 {
        publish(n).await;
    }
    for _ in 0..2 {
        seen.push(reader.next().await);
    }
    drop(reader);

    // Events while disconnected are delivered after Last-Event-ID.
    for n in 6..=8 {
        publish(n).await;
    }
    let last = seen.last().unwrap().0;
    let mut reader = SseReader { resp: open(Some(last)).await.unwrap(), buffer: String::new() };
    for _ in 0..3 {
        seen.push(reader.next().await);
    }
    let ns: Vec<i64> = seen.iter().map(|(_, _, d)| d["payload"]["n"].as_i64().unwrap()).collect();
    assert_eq!(ns, (1..=8).collect::<Vec<_>>(), "no gap and no duplicate");
    let ids: Vec<i64> = seen.iter().map(|(id, _, _)| *id).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "ids are consecutive: {ids:?}");
    assert!(seen.iter().all(|(_, kind, _)| kind == "test.tick"));
}

both_backends!(a_dropped_stream_resumes_without_gap_or_duplicate);
