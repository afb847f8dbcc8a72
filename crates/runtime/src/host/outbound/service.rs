//! One configured service: its HTTP client, its credentials and, for a form
//! login, its session. The session is the cookies the login answer set and
//! nothing else: the client keeps no cookie jar, so a cookie set by the
//! answer to a component's request never joins the session another
//! capability's request carries. Every secret the host sends (the key, the
//! password, the session cookies) is known to the service's redactor.

use std::time::{Duration, Instant};

use reqwest::header::{HeaderName, HeaderValue};
use tokio::sync::Mutex;

use super::link::Link;
use super::path;
use super::secrets::Redactor;
use crate::bindings::capstan::host::types::{HostError, Pair, Request, Response};
use capstan_config::{Auth, ServiceConfig};

/// How long a refused login is not retried, so a wrong password does not
/// get the host's address banned by the service.
const LOGIN_BACKOFF: Duration = Duration::from_secs(30);

/// A form login's state.
enum LoginState {
    Out,
    /// Logged in: the `Cookie` header value to send, and which login this
    /// is (so many calls seeing one expiry log in again once).
    In(String, u64),
    /// Refused at this time, for this (already masked) reason.
    Refused(Instant, String),
}

/// Earlier sessions' cookie values kept for masking: a service listing its
/// sessions would otherwise show old ones.
const PAST_SESSIONS: usize = 16;

/// The credentials a request carries, resolved for one send.
struct Credentials {
    header: Option<(HeaderName, HeaderValue)>,
    query: Option<(String, String)>,
    /// Path segments the URL carries after the base path.
    path: Option<String>,
    cookie: Option<String>,
    /// Every secret value above, and the ones they are derived from.
    secrets: Vec<String>,
    /// The login the cookie belongs to.
    generation: Option<u64>,
}

impl Credentials {
    fn redactor(&self) -> Redactor {
        Redactor::new(self.secrets.iter().map(String::as_str))
    }
}

pub(super) struct Service {
    pub config: ServiceConfig,
    base: reqwest::Url,
    client: reqwest::Client,
    /// A mutex so concurrent calls log in once.
    login: Mutex<LoginState>,
    logins: std::sync::atomic::AtomicU64,
    past_sessions: std::sync::Mutex<std::collections::VecDeque<String>>,
}

/// Says only what kind of failure it was: reqwest's text can contain the
/// URL, and with it a query secret.
pub(super) fn unavailable(service: &str, e: &reqwest::Error) -> HostError {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not be reached"
    } else {
        "failed"
    };
    HostError::Unavailable(format!("request to service {service} {what}"))
}

fn secret(value: &capstan_config::SecretRef) -> Result<String, HostError> {
    value.resolve().map_err(HostError::Unavailable)
}

impl Service {
    pub fn new(config: &ServiceConfig) -> anyhow::Result<Service> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_millis(config.timeout_ms))
            .build()?;
        let base = reqwest::Url::parse(&config.base_url)?;
        Ok(Service {
            config: config.clone(),
            base,
            client,
            login: Mutex::new(LoginState::Out),
            logins: std::sync::atomic::AtomicU64::new(0),
            past_sessions: std::sync::Mutex::new(std::collections::VecDeque::new()),
        })
    }

    /// The credential's own header and query names, which a component may
    /// not set (compared ignoring case, as many servers do).
    pub(crate) fn reserved_header(&self) -> Option<&str> {
        match &self.config.auth {
            Auth::Header { name, .. } => Some(name),
            _ => None,
        }
    }

    pub(crate) fn reserved_query(&self) -> Option<&str> {
        match &self.config.auth {
            Auth::Query { name, .. } => Some(name),
            _ => None,
        }
    }

    /// The form login's path, which only the host may call (a component
    /// logging in with wrong passwords would get the host banned).
    pub(crate) fn login_path(&self) -> Option<&str> {
        match &self.config.auth {
            Auth::FormLogin { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The URL for a checked path, confined under the base URL (and the
    /// secret segments a path credential puts after it, `secret`).
    fn url(
        &self,
        raw_path: &str,
        decoded: &str,
        query: &[(String, String)],
        secret: Option<&str>,
    ) -> Result<reqwest::Url, HostError> {
        let base = self.config.base_url.trim_end_matches('/');
        // Under a path credential, `/` is the secret's own URL.
        let (root, raw_path, decoded) = match secret {
            Some(segments) if raw_path == "/" => (format!("{base}/{segments}"), "", ""),
            Some(segments) => (format!("{base}/{segments}"), raw_path, decoded),
            None => (base.to_string(), raw_path, decoded),
        };
        // No error text carries the URL: it may hold the secret.
        let formed = |_| HostError::Invalid("path does not form a URL".into());
        let mut url = reqwest::Url::parse(&format!("{root}{raw_path}")).map_err(formed)?;
        let under = reqwest::Url::parse(&root).map_err(formed)?;
        if !path::stays_under(&under, &url, decoded) {
            return Err(HostError::Invalid(format!("path {raw_path:?} does not stay under the service's base URL")));
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }

    async fn credentials(&self) -> Result<Credentials, HostError> {
        let mut c =
            Credentials { header: None, query: None, path: None, cookie: None, secrets: Vec::new(), generation: None };
        let bad_value = || HostError::Internal("the configured credential is not a valid header value".into());
        match &self.config.auth {
            Auth::Header { name, value, prefix, suffix } => {
                let name = HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| HostError::Internal(format!("credential header name {name:?} is not valid")))?;
                let secret = secret(value)?;
                let sent = format!("{prefix}{secret}{suffix}");
                c.header = Some((name, HeaderValue::from_str(&sent).map_err(|_| bad_value())?));
                c.secrets.extend([secret, sent]);
            }
            Auth::Query { name, value } => {
                let secret = secret(value)?;
                c.query = Some((name.clone(), secret.clone()));
                // Also as it appears in the URL, so re-encodings of that are caught.
                c.secrets.push(form_urlencoded::byte_serialize(secret.as_bytes()).collect());
                c.secrets.push(secret);
            }
            Auth::Path { value, prefix } => {
                let secret = secret(value)?;
                // Sent as it is: nothing in it to encode or to reshape the path.
                if !capstan_config::path_safe(&secret, true) {
                    return Err(HostError::Internal(
                        "the configured credential cannot be part of a URL path: it may hold letters, digits, \
                         -, ., _, ~, : and single / between parts"
                            .into(),
                    ));
                }
                let segments = format!("{prefix}{secret}");
                c.secrets.extend(secret.split('/').filter(|s| s.len() >= 8).map(str::to_string));
                c.secrets.extend([secret, segments.clone()]);
                c.path = Some(segments);
            }
            Auth::Basic { username, password } => {
                use base64::Engine;
                let secret = secret(password)?;
                let pair = format!("{username}:{secret}");
                let token = base64::engine::general_purpose::STANDARD.encode(&pair);
                c.header = Some((
                    reqwest::header::AUTHORIZATION,
                    HeaderValue::from_str(&format!("Basic {token}")).map_err(|_| bad_value())?,
                ));
                c.secrets.extend([format!("Basic {token}"), token, pair, secret]);
            }
            Auth::FormLogin { password, .. } => {
                c.secrets.extend(password.resolve().ok());
                if let LoginState::In(cookies, generation) = &*self.login.lock().await {
                    c.secrets.extend(cookie_values(cookies));
                    c.secrets.push(cookies.clone());
                    c.cookie = Some(cookies.clone());
                    c.generation = Some(*generation);
                }
                c.secrets.extend(self.past_sessions.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned());
            }
            Auth::None => {}
        }
        Ok(c)
    }

    /// Logs in when the service uses a form login and is not logged in, or
    /// when the session `expired` (the login a refused request carried) is
    /// still the current one: many calls seeing one expiry log in once.
    pub async fn login(&self, expired: Option<u64>) -> Result<(), HostError> {
        let Auth::FormLogin { path, username, password, username_field, password_field } = &self.config.auth else {
            return Ok(());
        };
        let mut state = self.login.lock().await;
        match &*state {
            LoginState::In(_, current) if expired.is_none_or(|g| g != *current) => return Ok(()),
            LoginState::Refused(at, reason) if at.elapsed() < LOGIN_BACKOFF => {
                return Err(HostError::Denied(format!("{reason} (not retried for {} s)", LOGIN_BACKOFF.as_secs())));
            }
            _ => {}
        }
        let secret = secret(password)?;
        let redactor = Redactor::new([secret.as_str()]);
        let decoded = path::decoded(path).map_err(|why| HostError::Internal(format!("login path {path:?} {why}")))?;
        let url = self.url(path, &decoded, &[], None)?;
        let form = [(username_field.as_str(), username.as_str()), (password_field.as_str(), secret.as_str())];
        let origin = url.origin().ascii_serialization();
        let resp = self
            .client
            .post(url)
            .header(reqwest::header::REFERER, origin)
            .form(&form)
            .send()
            .await
            .map_err(|e| unavailable("login", &e))?;
        let status = resp.status();
        let cookies: Vec<String> = resp
            .headers()
            .get_all(reqwest::header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| v.split(';').next())
            .map(|pair| pair.trim().to_string())
            .filter(|pair| pair.split_once('=').is_some_and(|(n, v)| !n.is_empty() && !v.is_empty()))
            .collect();
        // Some services (qBittorrent among them) answer a wrong password
        // with 200 and a body such as `Fails.`; a login that sets no session
        // cookie has not logged anything in.
        let refusal = if !status.is_success() {
            Some(format!("login was refused with status {}", status.as_u16()))
        } else if cookies.is_empty() {
            let body = resp.text().await.unwrap_or_default();
            let said: String = redactor.text(body.trim()).chars().take(40).collect();
            Some(format!("login was not accepted: the service set no session cookie (it answered {said:?})"))
        } else {
            None
        };
        if let Some(reason) = refusal {
            let reason = redactor.text(&reason);
            *state = LoginState::Refused(Instant::now(), reason.clone());
            return Err(HostError::Denied(reason));
        }
        if let LoginState::In(old, _) = &*state {
            let mut past = self.past_sessions.lock().unwrap_or_else(|e| e.into_inner());
            past.extend(cookie_values(old));
            while past.len() > PAST_SESSIONS {
                past.pop_front();
            }
        }
        let generation = self.logins.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        *state = LoginState::In(cookies.join("; "), generation);
        Ok(())
    }

    /// Whether `link` is on this service's origin: the only place a link
    /// may take its credential.
    pub fn owns(&self, link: &Link) -> bool {
        link.origin == self.base.origin().ascii_serialization()
    }

    /// The configured base URL, parsed.
    pub fn base(&self) -> &reqwest::Url {
        &self.base
    }

    /// Sends one request whose path (or link) and headers were checked; returns the
    /// answer and a redactor for exactly the secrets this request carried.
    pub(crate) async fn send_once(
        &self,
        name: &str,
        req: &Request,
        decoded: &str,
        method: &reqwest::Method,
        link: Option<&Link>,
    ) -> Result<(reqwest::Response, Redactor, Option<u64>), HostError> {
        let creds = self.credentials().await?;
        let redactor = creds.redactor();
        let generation = creds.generation;
        let mut query: Vec<(String, String)> = req.query.iter().map(|p| (p.name.clone(), p.value.clone())).collect();
        let url = match link {
            // The link's own slots take the query credential; without one
            // it is added like any request's.
            Some(link) if link.has_slot() => link.url(creds.query.as_ref().map(|(_, v)| v.as_str()), &query)?,
            Some(link) => {
                query.extend(creds.query);
                link.url(None, &query)?
            }
            None => {
                query.extend(creds.query);
                self.url(&req.path, decoded, &query, creds.path.as_deref())?
            }
        };
        let mut builder = self.client.request(method.clone(), url);
        for h in &req.headers {
            builder = builder.header(&h.name, &h.value);
        }
        // The answer is masked before the component sees it, which a
        // compressed body would defeat.
        builder = builder.header(reqwest::header::ACCEPT_ENCODING, "identity");
        if let Some((name, value)) = creds.header {
            builder = builder.header(name, value);
        }
        if let Some(cookie) = creds.cookie {
            builder = builder.header(reqwest::header::COOKIE, cookie);
        }
        if let Some(body) = &req.body {
            builder = builder.body(body.clone());
        }
        let resp = builder.send().await.map_err(|e| unavailable(name, &e))?;
        Ok((resp, redactor, generation))
    }

    /// Reads the answer under the size cap and masks every secret in it.
    /// A link's binary answer (`whole`, and not UTF-8 text) is a file the
    /// component hands on as it is, such as a `.torrent`: masking a secret
    /// inside would corrupt it, and passing it unmasked would show the
    /// component the credential, so one that carries a secret is refused
    /// instead. Text is masked as any answer is.
    pub(crate) async fn read_masked(
        &self,
        name: &str,
        mut resp: reqwest::Response,
        redactor: &Redactor,
        whole: bool,
    ) -> Result<Response, HostError> {
        let cap = self.config.response_cap_bytes;
        let status = resp.status().as_u16();
        if let Some(encoding) = resp.headers().get(reqwest::header::CONTENT_ENCODING)
            && !encoding.as_bytes().eq_ignore_ascii_case(b"identity")
        {
            return Err(HostError::Unavailable(format!(
                "service {name} answered with a compressed body ({}), which the host does not pass on",
                String::from_utf8_lossy(encoding.as_bytes())
            )));
        }
        let headers = resp
            .headers()
            .iter()
            .filter(|(k, _)| *k != reqwest::header::SET_COOKIE)
            .map(|(k, v)| Pair {
                name: redactor.text(k.as_str()),
                value: redactor.text(&String::from_utf8_lossy(v.as_bytes())),
            })
            .collect();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| unavailable(name, &e))? {
            if body.len() as u64 + chunk.len() as u64 > cap {
                return Err(HostError::TooLarge(format!("response from service {name} exceeds {cap} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        if whole && redactor.finds(&body) && std::str::from_utf8(&body).is_err() {
            return Err(HostError::Unavailable(format!(
                "service {name} answered the link with a body that carries its credential; it is not passed on, \
                 since masking the credential would corrupt the file"
            )));
        }
        Ok(Response { status, headers, body: redactor.bytes(body) })
    }
}

/// The values of a `Cookie` header's pairs.
fn cookie_values(cookies: &str) -> Vec<String> {
    cookies.split(';').filter_map(|pair| pair.split_once('=')).map(|(_, v)| v.trim().to_string()).collect()
}
