//! The console from another machine on the LAN: the real binary serves
//! plain HTTP on every address, warns at start that there is no TLS, and
//! Chromium signs in through this machine's non-loopback address — the
//! session cookie is not `Secure` there (a browser would drop it), and it
//! is `Secure` only when a proxy the operator trusts says the browser used
//! HTTPS.

use std::io::{BufRead, Write};
use std::net::{IpAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capstan_tests::binary::capstan_bin;
use capstan_tests::browser::Browser;
use serde_json::{Value, json};

use crate::cli::paths::{Server, wait_for_health, workdir};

/// This machine's address on its network: the source address the kernel
/// picks for an outside destination (a UDP connect sends nothing).
fn lan_address() -> IpAddr {
    let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
    socket
        .connect("198.51.100.1:9")
        .expect("this test needs a network interface with a route, to reach this machine other than by loopback");
    let ip = socket.local_addr().unwrap().ip();
    assert!(!ip.is_loopback() && !ip.is_unspecified(), "no non-loopback address: {ip}");
    ip
}

fn capstan(cwd: &std::path::Path) -> Command {
    let mut command = Command::new(capstan_bin());
    command
        .current_dir(cwd)
        .args(["--config", "capstan.toml"])
        .env("RUST_LOG", "warn")
        .env_remove("CAPSTAN_DATA_DIR")
        .env_remove("CAPSTAN_CONFIG")
        .env_remove("CAPSTAN_DATABASE_URL");
    command
}

/// Logs bob in at `base` with `headers`; the `Set-Cookie` value and the
/// CSRF token.
async fn login(base: &str, headers: &[(&str, &str)]) -> (String, String) {
    let mut request = reqwest::Client::new()
        .post(format!("{base}/api/v1/session"))
        .json(&json!({"name": "bob", "password": "correct horse battery"}));
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let resp = request.send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let cookie = resp.headers()["set-cookie"].to_str().unwrap().to_string();
    let csrf = resp.json::<Value>().await.unwrap()["csrfToken"].as_str().unwrap().to_string();
    (cookie, csrf)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_administrator_signs_in_from_another_machine_over_plain_http() {
    let lan = lan_address();
    let dir = workdir();
    let cwd = dir.path();
    // The operator's HTTPS proxy runs on this machine.
    std::fs::write(cwd.join("capstan.toml"), "data_dir = \"data\"\ntrusted_proxies = [\"127.0.0.1\"]\n").unwrap();
    let mut set = capstan(cwd).args(["admin", "set-password", "--name", "bob"]).stdin(Stdio::piped()).spawn().unwrap();
    set.stdin.take().unwrap().write_all(b"correct horse battery\n").unwrap();
    assert!(set.wait().unwrap().success());

    let port = std::net::TcpListener::bind("0.0.0.0:0").unwrap().local_addr().unwrap().port();
    let mut child = capstan(cwd)
        .args(["serve", "--listen", &format!("0.0.0.0:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let printed = Arc::new(Mutex::new(String::new()));
    let lines = std::io::BufReader::new(child.stderr.take().unwrap());
    let sink = printed.clone();
    std::thread::spawn(move || {
        for line in lines.lines().map_while(Result::ok) {
            sink.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    let mut server = Server(child);
    let base = format!("http://{lan}:{port}");
    wait_for_health(&base, &mut server.0).await;

    // The operator is told, once, that the console has no TLS.
    let started = Instant::now();
    while !printed.lock().unwrap().contains("without TLS") {
        assert!(started.elapsed() < Duration::from_secs(30), "no TLS warning in: {}", printed.lock().unwrap());
        std::thread::sleep(Duration::from_millis(100));
    }
    let warning = printed.lock().unwrap().clone();
    assert!(warning.contains("WARN") && warning.contains("reachable from other machines"), "{warning}");

    // Over the LAN the cookie is not Secure, and a forwarding header from a
    // client that is no trusted proxy changes nothing.
    let (cookie, _) = login(&base, &[("x-forwarded-proto", "https")]).await;
    assert!(cookie.contains("HttpOnly") && !cookie.contains("Secure"), "{cookie}");
    // Through the trusted proxy, HTTPS makes it Secure; plain HTTP does not.
    let local = format!("http://127.0.0.1:{port}");
    let (cookie, _) = login(&local, &[("x-forwarded-proto", "https")]).await;
    assert!(cookie.contains("; Secure"), "{cookie}");
    let (cookie, _) = login(&local, &[("forwarded", "for=203.0.113.7;proto=https")]).await;
    assert!(cookie.contains("; Secure"), "{cookie}");
    let (cookie, csrf) = login(&local, &[]).await;
    assert!(!cookie.contains("Secure"), "{cookie}");
    let session = cookie.split(';').next().unwrap().to_string();

    // Chromium on the LAN address signs in, stays signed in across a
    // reload (its cookie was kept), writes, and signs out.
    let browser = Browser::start().await;
    browser.client.goto(&format!("{base}/")).await.unwrap();
    browser.fill("#login-name", "bob").await;
    browser.fill("#login-password", "correct horse battery").await;
    browser.click("#login-submit").await;
    browser.wait_text("#who", "named the administrator", |t| t.contains("bob")).await;
    browser.click("nav button[data-tab=capabilities]").await;
    browser.wait_text("#capabilities", "listed the capabilities", |t| t.contains("release.inspect")).await;
    browser.client.refresh().await.unwrap();
    browser.wait_text("#who", "kept the session across a reload", |t| t.contains("bob")).await;
    browser.click("nav button[data-tab=settings]").await;
    browser.fill("input[name='agent.max_tool_calls']", "17").await;
    browser.click("#settings-save").await;
    browser.wait_text("#settings-saved", "saved", |t| t.starts_with("Saved")).await;
    let settings: Value = reqwest::Client::new()
        .get(format!("{local}/api/v1/settings"))
        .header("cookie", &session)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(settings["settings"]["agent.max_tool_calls"], 17, "{settings}");
    browser.click("#logout").await;
    let started = Instant::now();
    while browser.shown("#app-view").await {
        assert!(started.elapsed() < Duration::from_secs(20), "signing out did not close the console");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(browser.shown("#login-submit").await);
    browser.close().await;

    // Signing out through the trusted HTTPS proxy expires a Secure cookie.
    let out = reqwest::Client::new()
        .delete(format!("{local}/api/v1/session"))
        .header("cookie", &session)
        .header("x-csrf-token", &csrf)
        .header("x-forwarded-proto", "https")
        .send()
        .await
        .unwrap();
    assert_eq!(out.status().as_u16(), 204);
    let expired = out.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(expired.contains("Max-Age=0") && expired.contains("; Secure"), "{expired}");
}
