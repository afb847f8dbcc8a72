//! Console sign-in under abuse: before any password exists the answer says
//! how to set one; a wrong name and a wrong password read and cost the
//! same; failures pause the client that made them (429 with `Retry-After`)
//! but never the administrator signing in from elsewhere; a burst gets no
//! more tries than a sequence; pauses reach the audit log and the metrics;
//! and a flood of wrong sign-ins from many addresses keeps the real
//! server's memory within the password pool's.

use std::time::{Duration, Instant};

use capstan_tests::api::serve_with;
use capstan_tests::binary::{Serving, set_password};
use capstan_tests::db::Backend;
use serde_json::{Value, json};

use crate::storage::ledger::env;

const PASSWORD: &str = "correct horse battery";

/// A server that believes loopback's `X-Forwarded-For`, so each test can
/// speak as many clients.
async fn behind_a_proxy(app: std::sync::Arc<capstan::app::App>) -> String {
    let options =
        capstan::http::HttpOptions { trusted_proxies: vec!["127.0.0.1".parse().unwrap()], ..Default::default() };
    serve_with(app, options).await
}

async fn sign_in(http: &reqwest::Client, base: &str, client: &str, name: &str, password: &str) -> reqwest::Response {
    http.post(format!("{base}/session"))
        .header("x-forwarded-for", client)
        .json(&json!({ "name": name, "password": password }))
        .send()
        .await
        .unwrap()
}

async fn status_and_body(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn before_any_password_the_answer_says_how_to_set_one() {
    let env = env(Backend::Sqlite).await;
    let base = behind_a_proxy(env.app.clone()).await;
    let http = reqwest::Client::new();
    let (status, body) = status_and_body(sign_in(&http, &base, "198.51.100.1", "admin", "anything at all").await).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["code"], "no_administrator");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("capstan admin set-password"), "{message}");
    // Once a password is set, the same attempt is an ordinary wrong password.
    capstan::http::session::set_password(&env.db, "admin", PASSWORD).await.unwrap();
    let (status, body) = status_and_body(sign_in(&http, &base, "198.51.100.1", "admin", "anything at all").await).await;
    assert_eq!((status, body["error"]["code"].as_str()), (401, Some("unauthorized")));
}

/// The median time of `n` sign-ins as `name`, each from a client of its own.
async fn median_sign_in(http: &reqwest::Client, base: &str, name: &str, first_client: u8, n: u8) -> (Duration, Value) {
    let mut times = Vec::new();
    let mut body = Value::Null;
    for i in 0..n {
        let client = format!("203.0.113.{}", first_client + i);
        let started = Instant::now();
        let resp = sign_in(http, base, &client, name, "not the password").await;
        times.push(started.elapsed());
        let (status, answered) = status_and_body(resp).await;
        assert_eq!(status, 401, "{answered}");
        body = answered;
    }
    times.sort();
    (times[times.len() / 2], body)
}

#[tokio::test]
async fn a_wrong_name_and_a_wrong_password_read_and_cost_the_same() {
    let env = env(Backend::Sqlite).await;
    let base = behind_a_proxy(env.app.clone()).await;
    capstan::http::session::set_password(&env.db, "admin", PASSWORD).await.unwrap();
    let http = reqwest::Client::new();
    // Alternating rounds, so a machine busy with other tests slows both alike.
    let mut known = Vec::new();
    let mut unknown = Vec::new();
    for round in 0..3u8 {
        let (t, body_known) = median_sign_in(&http, &base, "admin", round * 20, 5).await;
        known.push(t);
        let (t, body_unknown) = median_sign_in(&http, &base, "nobody-by-this-name", 100 + round * 20, 5).await;
        unknown.push(t);
        assert_eq!(body_known, body_unknown, "the answers differ");
    }
    known.sort();
    unknown.sort();
    let (known, unknown) = (known[1], unknown[1]);
    println!("median sign-in: existing name {known:?}, unknown name {unknown:?}");
    // Without the same work an unknown name answered ~50 times sooner.
    assert!(
        unknown * 3 >= known && known * 3 >= unknown,
        "an existing name takes {known:?} and an unknown one {unknown:?}: timing tells them apart"
    );
}

#[tokio::test]
async fn failures_pause_their_client_but_not_the_administrator_elsewhere() {
    let env = env(Backend::Sqlite).await;
    let base = behind_a_proxy(env.app.clone()).await;
    capstan::http::session::set_password(&env.db, "admin", PASSWORD).await.unwrap();
    let http = reqwest::Client::new();
    let guesser = "192.0.2.66";
    let free = capstan::http::signin::throttle::CLIENT_FREE;
    // The free failures and the one that starts the first pause are all
    // checked and refused as wrong.
    for _ in 0..=free {
        let (status, _) = status_and_body(sign_in(&http, &base, guesser, "admin", "guess").await).await;
        assert_eq!(status, 401);
    }
    let resp = sign_in(&http, &base, guesser, "admin", PASSWORD).await;
    assert_eq!(resp.status().as_u16(), 429, "a paused client is refused even with the right password");
    let retry: u64 = resp.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=900).contains(&retry), "Retry-After {retry}");
    let (_, body) = status_and_body(resp).await;
    assert_eq!(body["error"]["code"], "too_many_attempts");

    // The administrator, from a machine that has not failed, signs in.
    let resp = sign_in(&http, &base, "192.0.2.10", "admin", PASSWORD).await;
    assert_eq!(resp.status().as_u16(), 200);

    // The pause is in the audit log and the metrics.
    let events = capstan::audit::Audit::new(env.db.clone()).list(0, 1000).await.unwrap();
    let paused: Vec<_> = events.iter().filter(|e| e.event.action == "session.sign_in_paused").collect();
    assert!(!paused.is_empty(), "no pause was audited");
    assert!(paused[0].event.principal.contains(guesser), "{:?}", paused[0].event.principal);
    let metrics = http.get(base.replace("/api/v1", "/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("capstan_sign_ins_total{outcome=\"paused\"} 1"), "{metrics}");
    assert!(metrics.contains("capstan_sign_ins_total{outcome=\"succeeded\"} 1"), "{metrics}");

    // After the pause the client may try once more, and is paused for longer.
    tokio::time::sleep(Duration::from_secs(retry)).await;
    let (status, _) = status_and_body(sign_in(&http, &base, guesser, "admin", "guess").await).await;
    assert_eq!(status, 401);
    let resp = sign_in(&http, &base, guesser, "admin", "guess").await;
    assert_eq!(resp.status().as_u16(), 429);
    let longer: u64 = resp.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(longer > retry, "the second pause ({longer} s) is not longer than the first ({retry} s)");
}

#[tokio::test]
async fn a_burst_from_one_client_gets_no_more_tries_than_a_sequence() {
    let env = env(Backend::Sqlite).await;
    let base = behind_a_proxy(env.app.clone()).await;
    capstan::http::session::set_password(&env.db, "admin", PASSWORD).await.unwrap();
    let http = reqwest::Client::new();
    let burst = (0..40).map(|_| sign_in(&http, &base, "192.0.2.77", "admin", "guess"));
    let statuses: Vec<u16> = futures_util::future::join_all(burst).await.iter().map(|r| r.status().as_u16()).collect();
    let checked = statuses.iter().filter(|s| **s == 401).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(checked + refused, statuses.len(), "{statuses:?}");
    assert!(checked <= capstan::http::signin::throttle::CLIENT_FREE as usize, "{checked} guesses were checked");
}

#[tokio::test]
async fn a_flood_of_wrong_sign_ins_keeps_the_servers_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let config = dir.path().join("capstan.toml");
    std::fs::write(&config, "trusted_proxies = [\"127.0.0.1\"]\n").unwrap();
    set_password(&data, "admin", PASSWORD);
    let server = Serving::start(dir.path(), &data, &[("CAPSTAN_CONFIG", config.to_str().unwrap())]).await;
    let base = server.base();
    let http = reqwest::Client::new();
    // One sign-in first, so what is measured is the flood, not a first use.
    assert_eq!(sign_in(&http, &base, "10.9.0.1", "admin", PASSWORD).await.status().as_u16(), 200);
    let before = server.memory_kib("VmRSS");
    server.reset_peak_memory();
    let started = Instant::now();
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    // 600 attempts from 300 addresses, 48 at a time.
    for wave in 0..(600 / 48 + 1) {
        let attempts = (0..48).map(|i| {
            let n = wave * 48 + i;
            let client = format!("10.{}.{}.{}", 1 + n / 2 / 250, (n / 2) % 250, 1 + n % 2);
            let name = if n % 3 == 0 { format!("guess-{n}") } else { "admin".to_string() };
            let http = http.clone();
            let base = base.clone();
            async move { sign_in(&http, &base, &client, &name, "wrong password").await.status().as_u16() }
        });
        for status in futures_util::future::join_all(attempts).await {
            *statuses.entry(status).or_default() += 1;
        }
    }
    let peak = server.memory_kib("VmHWM");
    let after = server.memory_kib("VmRSS");
    println!(
        "flood of {} sign-ins in {:?}: answers {statuses:?}; resident before {} MiB, peak {} MiB, after {} MiB",
        statuses.values().sum::<usize>(),
        started.elapsed(),
        before / 1024,
        peak / 1024,
        after / 1024
    );
    assert!(statuses.keys().all(|s| *s == 401 || *s == 429), "{statuses:?}");
    assert!(statuses.get(&401).copied().unwrap_or(0) > 0, "no attempt was checked at all");
    // Two password checks of 19 MiB each, and room for the requests: a
    // check per request would have taken gigabytes.
    assert!(peak.saturating_sub(before) < 160 * 1024, "peak {} MiB over {} MiB before", peak / 1024, before / 1024);
    // The administrator still signs in.
    assert_eq!(sign_in(&http, &base, "10.250.0.1", "admin", PASSWORD).await.status().as_u16(), 200);
}
