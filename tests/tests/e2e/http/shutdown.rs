//! `capstan serve` stops promptly when told to, with a console open: the
//! event stream a browser holds ends on SIGTERM, the log says the server is
//! shutting down, every background loop the process started is stopped
//! and joined, then the services' own tasks (the component audit writer,
//! the MCP links, the event listener), and the process exits cleanly well
//! within its grace period.

use std::time::{Duration, Instant};

use capstan_tests::binary::{Serving, set_password};
use serde_json::json;

#[tokio::test]
async fn serve_exits_promptly_on_sigterm_with_an_event_stream_open() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    set_password(&data, "admin", "correct horse battery");
    let mut server = Serving::start(dir.path(), &data, &[]).await;
    let http = reqwest::Client::new();
    let signed_in = http
        .post(format!("{}/session", server.base()))
        .json(&json!({ "name": "admin", "password": "correct horse battery" }))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status().as_u16(), 200);
    let cookie = signed_in.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    // The console's live view: a stream that stays open.
    let stream = http
        .get(format!("{}/events", server.base()))
        .header("cookie", &cookie)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let mut stream = stream;
    let reader = tokio::spawn(async move {
        // Read until the server ends the stream.
        while let Ok(Some(_)) = stream.chunk().await {}
        Instant::now()
    });

    server.terminate();
    let told = Instant::now();
    let grace = capstan::http::SHUTDOWN_GRACE;
    let status = server.exited_within(grace + Duration::from_secs(20)).await;
    let took = told.elapsed();
    println!("serve exited {took:?} after SIGTERM with an event stream open");
    assert!(status.is_some(), "serve still running {took:?} after SIGTERM:\n{}", server.log());
    assert!(server.log().contains("shutting down"), "{}", server.log());
    let status = status.unwrap();
    assert!(status.success(), "serve exited with {status}:\n{}", server.log());
    let log = server.log();
    let stopped = log.lines().find(|l| l.contains("every background loop stopped")).unwrap_or_else(|| panic!("{log}"));
    for name in ["heartbeat", "setup", "agent-waker", "worker", "watcher", "retention"] {
        assert!(stopped.contains(name), "{name} is not among the loops stopped: {stopped}");
    }
    // Then the services' own tasks, none cut off.
    assert!(log.contains("every service task stopped"), "the services' tasks were not all stopped:\n{log}");
    assert!(!log.contains("cut off"), "{log}");
    let ended = tokio::time::timeout(Duration::from_secs(10), reader).await.expect("the stream never ended").unwrap();
    // The stream was ended by the shutdown, not left for the grace period to cut.
    assert!(ended.duration_since(told) < grace, "the stream ended only {:?} after SIGTERM", ended.duration_since(told));
}
