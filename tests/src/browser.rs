//! A real Chromium for the console suite: `chromedriver` on a free loopback
//! port and a headless browser with a fresh profile, driven over WebDriver
//! with `fantoccini`. Both come from Debian's `chromium` and
//! `chromium-driver` packages, which `scripts/setup.sh` installs; without
//! them the suite fails, naming the packages.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::error::CmdError;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

/// Where Debian puts the browser.
const CHROMIUM: &str = "/usr/bin/chromium";

pub struct Browser {
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Browser {
    pub async fn start() -> Browser {
        assert!(
            std::path::Path::new(CHROMIUM).exists(),
            "{CHROMIUM} is missing: install the Debian packages chromium and chromium-driver (scripts/setup.sh does)"
        );
        let port = free_port();
        // Its own process group, so the browsers it starts go with it.
        let driver = Command::new("chromedriver")
            .process_group(0)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver is missing: install the Debian package chromium-driver (scripts/setup.sh does)");
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        while reqwest::get(format!("{url}/status")).await.is_err() {
            assert!(started.elapsed() < Duration::from_secs(20), "chromedriver did not start on {url}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().unwrap();
        // Headless, as root in a container, and quiet on a closed network.
        let options = json!({
            "binary": CHROMIUM,
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                     "--no-first-run", "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", format!("--user-data-dir={}", profile.path().display())],
        });
        let mut caps = serde_json::Map::new();
        caps.insert("goog:chromeOptions".into(), options);
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&url)
            .await
            .expect("could not start a Chromium session through chromedriver");
        Browser { client, driver, _profile: profile }
    }

    /// Does `act` to the element `css` once it is there. A list the console
    /// re-renders (on a timer, or on opening its tab) may replace the
    /// element between finding it and acting on it: it is found again, as
    /// a user would see and click the new one. One that is there but not
    /// shown yet (the console after a reload, until its session check
    /// answers) is waited for, as a user waits to see it.
    async fn on_element<T, F, Fut>(&self, css: &str, act: F) -> T
    where
        F: Fn(Element) -> Fut,
        Fut: Future<Output = Result<T, CmdError>>,
    {
        let started = Instant::now();
        loop {
            let element = self.client.wait().for_element(Locator::Css(css)).await.unwrap();
            match act(element).await {
                Ok(done) => return done,
                Err(e)
                    if (e.is_stale_element_reference() || e.is_element_not_interactable())
                        && started.elapsed() < Duration::from_secs(30) =>
                {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("{css}: {e}"),
            }
        }
    }

    /// The text of the element `css`, once it is there.
    pub async fn text(&self, css: &str) -> String {
        self.on_element(css, |e| async move { e.text().await }).await
    }

    /// Waits until the text of `css` satisfies `cond`; panics with the last
    /// text seen after 30 s.
    pub async fn wait_text(&self, css: &str, what: &str, cond: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let text = match self.client.find(Locator::Css(css)).await {
                Ok(element) => element.text().await.unwrap_or_default(),
                Err(_) => String::new(),
            };
            if cond(&text) {
                return text;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{css} never {what}; last text: {text:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Types `text` into the field `css` after clearing it.
    pub async fn fill(&self, css: &str, text: &str) {
        self.on_element(css, |field| async move {
            field.clear().await?;
            field.send_keys(text).await
        })
        .await
    }

    /// Chooses the option with `value` in the select `css`.
    pub async fn select(&self, css: &str, value: &str) {
        self.on_element(css, |field| async move { field.select_by_value(value).await }).await
    }

    /// Opens the console at `root` and signs in as `name`.
    pub async fn sign_in(&self, root: &str, name: &str, password: &str) {
        self.client.goto(&format!("{root}/")).await.unwrap();
        self.fill("#login-name", name).await;
        self.fill("#login-password", password).await;
        self.click("#login-submit").await;
        self.wait_text("#who", "named the administrator", |t| t.contains(name)).await;
    }

    pub async fn click(&self, css: &str) {
        self.on_element(css, |e| async move { e.click().await }).await
    }

    /// The attribute `name` of the element `css`, once it is there.
    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        self.on_element(css, |e| async move { e.attr(name).await }).await
    }

    /// Waits until the attribute `name` of `css` is `expected`.
    pub async fn wait_attr(&self, css: &str, name: &str, expected: &str) {
        let started = Instant::now();
        loop {
            let now = match self.client.find(Locator::Css(css)).await {
                Ok(element) => element.attr(name).await.unwrap_or_default(),
                Err(_) => None,
            };
            if now.as_deref() == Some(expected) {
                return;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{css}'s {name} never became {expected:?}: {now:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The DOM property `name` of the element `css` (an input's current
    /// `value`, say), once it is there.
    pub async fn prop(&self, css: &str, name: &str) -> Option<String> {
        self.on_element(css, |e| async move { e.prop(name).await }).await
    }

    /// Whether `css` is shown (not hidden).
    pub async fn shown(&self, css: &str) -> bool {
        self.on_element(css, |e| async move { e.is_displayed().await }).await
    }

    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for Browser {
    /// Ends chromedriver and every Chromium process it started, also when a
    /// test panicked before closing the session.
    fn drop(&mut self) {
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(Stdio::null()).status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
