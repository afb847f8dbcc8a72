//! `capstan:host/outbound-read` (read) and `outbound-write` (execute):
//! HTTP to operator-named services. A component names a service from its
//! descriptor and a path; the host builds the URL from the configured base,
//! adds credentials the component never sees, classes the operation with the
//! service's table, applies the timeout and caps the response size.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::Mutex;

use crate::config::{Auth, ServiceConfig};
use crate::runtime::bindings::capstan::host::types::{HostError, Pair, Request, Response};
use crate::runtime::bindings::capstan::host::{outbound_read, outbound_write};
use crate::runtime::call_state::CallState;
use crate::runtime::effects::EffectClass;

/// Headers only the host may set.
const RESERVED_HEADERS: &[&str] = &["authorization", "cookie", "host", "proxy-authorization", "content-length"];

/// One configured service with its HTTP client and login state.
struct Service {
    config: ServiceConfig,
    client: reqwest::Client,
    /// Where a form login stands; a mutex so concurrent calls log in once.
    login: Mutex<LoginState>,
}

/// A form login's state.
enum LoginState {
    Out,
    In,
    /// Refused at this time, for this reason. Further attempts wait out
    /// [`LOGIN_BACKOFF`], so a wrong password does not get the host's
    /// address banned by the service.
    Refused(std::time::Instant, String),
}

/// How long a refused login is not retried.
const LOGIN_BACKOFF: Duration = Duration::from_secs(30);

/// All configured outbound services.
pub struct Outbound {
    services: BTreeMap<String, Service>,
}

impl Outbound {
    pub fn new(configs: &BTreeMap<String, ServiceConfig>) -> anyhow::Result<Outbound> {
        let mut services = BTreeMap::new();
        for (name, config) in configs {
            let client = reqwest::Client::builder()
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_millis(config.timeout_ms))
                .build()?;
            services
                .insert(name.clone(), Service { config: config.clone(), client, login: Mutex::new(LoginState::Out) });
        }
        Ok(Outbound { services })
    }
}

/// Checks the component's path: relative to the base, no escape hatches.
fn valid_path(path: &str) -> Result<(), HostError> {
    let bad = |why: &str| Err(HostError::Invalid(format!("path {path:?} {why}")));
    if !path.starts_with('/') {
        return bad("must start with /");
    }
    if path.starts_with("//") || path.contains("://") {
        return bad("must not name a host");
    }
    if path.contains(['?', '#', '\\']) || path.chars().any(|c| c.is_control() || c == ' ') {
        return bad("must not contain ?, #, \\, spaces or control characters (pass query pairs separately)");
    }
    if path.split('/').any(|seg| seg == ".." || seg == ".") {
        return bad("must not contain . or .. segments");
    }
    Ok(())
}

fn unavailable(service: &str, e: &reqwest::Error) -> HostError {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not be reached"
    } else {
        "failed"
    };
    // The error text can contain the URL with a query secret; say only what kind.
    HostError::Unavailable(format!("request to service {service} {what}"))
}

impl Service {
    fn url(&self, path: &str, query: &[Pair]) -> Result<reqwest::Url, HostError> {
        let base = self.config.base_url.trim_end_matches('/');
        let mut url = reqwest::Url::parse(&format!("{base}{path}"))
            .map_err(|e| HostError::Invalid(format!("path does not form a URL: {e}")))?;
        {
            let mut pairs = url.query_pairs_mut();
            for p in query {
                pairs.append_pair(&p.name, &p.value);
            }
            if let Auth::Query { name, value } = &self.config.auth {
                let secret = value.resolve().map_err(HostError::Unavailable)?;
                pairs.append_pair(name, &secret);
            }
        }
        if url.query() == Some("") {
            url.set_query(None);
        }
        Ok(url)
    }

    async fn login(&self, force: bool) -> Result<(), HostError> {
        let Auth::FormLogin { path, username, password, username_field, password_field } = &self.config.auth else {
            return Ok(());
        };
        let mut state = self.login.lock().await;
        match &*state {
            LoginState::In if !force => return Ok(()),
            LoginState::Refused(at, reason) if at.elapsed() < LOGIN_BACKOFF => {
                return Err(HostError::Denied(format!("{reason} (not retried for {} s)", LOGIN_BACKOFF.as_secs())));
            }
            _ => {}
        }
        let secret = password.resolve().map_err(HostError::Unavailable)?;
        let url = self.url(path, &[])?;
        let form = [(username_field.as_str(), username.as_str()), (password_field.as_str(), secret.as_str())];
        let origin = url.origin().ascii_serialization();
        let resp = self
            .client
            .post(url)
            .header("Referer", origin)
            .form(&form)
            .send()
            .await
            .map_err(|e| unavailable("login", &e))?;
        let status = resp.status();
        // Some services (qBittorrent among them) answer a wrong password
        // with 200 and a body such as `Fails.`; a login that sets no session
        // cookie has not logged anything in.
        let set_cookie = resp.headers().contains_key(reqwest::header::SET_COOKIE);
        let refusal = if !status.is_success() {
            Some(format!("login was refused with status {}", status.as_u16()))
        } else if !set_cookie {
            let body = resp.text().await.unwrap_or_default();
            let said: String = body.trim().chars().take(40).collect();
            Some(format!("login was not accepted: the service set no session cookie (it answered {said:?})"))
        } else {
            None
        };
        if let Some(reason) = refusal {
            *state = LoginState::Refused(std::time::Instant::now(), reason.clone());
            return Err(HostError::Denied(reason));
        }
        *state = LoginState::In;
        Ok(())
    }

    async fn send_once(
        &self,
        name: &str,
        req: &Request,
        method: &reqwest::Method,
    ) -> Result<reqwest::Response, HostError> {
        let url = self.url(&req.path, &req.query)?;
        let mut builder = self.client.request(method.clone(), url);
        for h in &req.headers {
            builder = builder.header(&h.name, &h.value);
        }
        builder = match &self.config.auth {
            Auth::Header { name, value, prefix } => {
                let secret = value.resolve().map_err(HostError::Unavailable)?;
                builder.header(name, format!("{prefix}{secret}"))
            }
            Auth::Basic { username, password } => {
                let secret = password.resolve().map_err(HostError::Unavailable)?;
                builder.basic_auth(username, Some(secret))
            }
            _ => builder,
        };
        if let Some(body) = &req.body {
            builder = builder.body(body.clone());
        }
        builder.send().await.map_err(|e| unavailable(name, &e))
    }

    async fn read_capped(&self, name: &str, mut resp: reqwest::Response) -> Result<Response, HostError> {
        let cap = self.config.response_cap_bytes;
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .filter(|(k, _)| k.as_str() != "set-cookie")
            .map(|(k, v)| Pair { name: k.to_string(), value: String::from_utf8_lossy(v.as_bytes()).into_owned() })
            .collect();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| unavailable(name, &e))? {
            if body.len() as u64 + chunk.len() as u64 > cap {
                return Err(HostError::TooLarge(format!("response from service {name} exceeds {cap} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Response { status, headers, body })
    }
}

impl CallState {
    async fn send(&mut self, import: &str, req: Request) -> Result<Response, HostError> {
        let class = if import.ends_with("outbound-read") { EffectClass::Read } else { EffectClass::Execute };
        self.check(import, class)?;
        if !self.target.services.contains(&req.service) {
            let reason = format!("service {} is not declared by {}", req.service, self.target.id);
            self.deny(import, class, reason.clone());
            return Err(HostError::Denied(reason));
        }
        let services = self.services.clone();
        let service =
            services.outbound.services.get(&req.service).ok_or_else(|| {
                HostError::NotFound(format!("service {} is not configured by the operator", req.service))
            })?;
        let method = reqwest::Method::from_bytes(req.method.as_bytes())
            .ok()
            .filter(|m| ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"].contains(&m.as_str()))
            .ok_or_else(|| HostError::Invalid(format!("method {:?} is not allowed", req.method)))?;
        valid_path(&req.path)?;
        if let Some(h) = req.headers.iter().find(|h| RESERVED_HEADERS.contains(&h.name.to_ascii_lowercase().as_str())) {
            return Err(HostError::Invalid(format!("header {} is reserved for the host", h.name)));
        }
        let is_read = service.config.is_read(method.as_str(), &req.path);
        if !is_read && class == EffectClass::Read {
            let reason = format!("{} {} on service {} is a write operation", method, req.path, req.service);
            self.deny(import, EffectClass::Execute, reason.clone());
            return Err(HostError::Denied(reason));
        }
        service.login(false).await?;
        if !is_read {
            self.mark_effect();
        }
        let mut resp = service.send_once(&req.service, &req, &method).await?;
        let needs_login = matches!(service.config.auth, Auth::FormLogin { .. });
        if needs_login && matches!(resp.status().as_u16(), 401 | 403) {
            // The session expired: log in again and retry once.
            service.login(true).await?;
            resp = service.send_once(&req.service, &req, &method).await?;
        }
        service.read_capped(&req.service, resp).await
    }
}

impl outbound_read::Host for CallState {
    async fn send(&mut self, req: Request) -> Result<Response, HostError> {
        CallState::send(self, "capstan:host/outbound-read", req).await
    }
}

impl outbound_write::Host for CallState {
    async fn send(&mut self, req: Request) -> Result<Response, HostError> {
        CallState::send(self, "capstan:host/outbound-write", req).await
    }
}

#[cfg(test)]
mod tests {
    use super::valid_path;

    #[test]
    fn paths_cannot_name_a_host_or_escape() {
        assert!(valid_path("/3/search/movie").is_ok());
        assert!(valid_path("3/search").is_err());
        assert!(valid_path("//evil.example/x").is_err());
        assert!(valid_path("/a/../../etc").is_err());
        assert!(valid_path("/x?api_key=1").is_err());
        assert!(valid_path("/http://evil").is_err());
    }
}
