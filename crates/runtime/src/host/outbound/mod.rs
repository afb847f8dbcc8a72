//! `capstan:host/outbound-read` (read) and `outbound-write` (execute):
//! HTTP to operator-named services. A component names a service from its
//! descriptor and a path (or a link the service gave, on its own address:
//! see `link`); the host builds the URL from the configured base,
//! adds credentials the component never sees, classes the operation with the
//! service's table on the path the server will see, applies the timeout,
//! caps the response size and masks every injected secret out of what
//! comes back.

use std::collections::BTreeMap;

use reqwest::header::{HeaderName, HeaderValue};

use super::boundary::host_call;
use crate::bindings::capstan::host::types::{HostError, Pair, Request, Response};
use crate::bindings::capstan::host::{outbound_read, outbound_write};
use crate::call_state::CallCore;
use crate::effects::{EffectClass, interface, interface_class};
use capstan_config::{Auth, ServiceConfig};

mod link;
mod path;
mod secrets;
mod service;

use service::Service;

/// Headers only the host may set: credentials, the message's framing, the
/// encoding masking depends on, and the overrides some servers and proxies
/// honour to route a request as another method or path.
const RESERVED_HEADERS: &[&str] = &[
    "authorization",
    "cookie",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "accept-encoding",
    "x-http-method-override",
    "x-http-method",
    "x-method-override",
    "x-original-url",
    "x-rewrite-url",
    "forwarded",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-forwarded-prefix",
];

/// Query parameters some frameworks read as the request's method.
const RESERVED_QUERY: &[&str] = &["_method"];

/// Whether a body carries a method override (`_method=`, form or JSON), as
/// Rails, Laravel and Symfony read on a POST.
fn overrides_method(req: &Request) -> bool {
    let Some(body) = &req.body else { return false };
    let text = String::from_utf8_lossy(body).to_ascii_lowercase();
    text.starts_with("_method=") || text.contains("&_method=") || text.contains("\"_method\"")
}

/// All configured outbound services.
pub struct Outbound {
    services: BTreeMap<String, Service>,
}

impl Outbound {
    pub fn new(configs: &BTreeMap<String, ServiceConfig>) -> anyhow::Result<Outbound> {
        let services = configs
            .iter()
            .map(|(name, config)| Ok((name.clone(), Service::new(config)?)))
            .collect::<anyhow::Result<_>>()?;
        Ok(Outbound { services })
    }
}

impl Outbound {
    /// Whether the operator set up service `name`.
    pub fn has(&self, name: &str) -> bool {
        self.services.contains_key(name)
    }

    /// A request the host itself makes to `service` (the console's Test
    /// button): the same path checks, credentials and masking as a
    /// component's. Returns the status and the (masked) body, or why not.
    pub async fn host_request(
        &self,
        name: &str,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
    ) -> Result<(u16, Vec<u8>), String> {
        let service = self.services.get(name).ok_or_else(|| format!("service {name} is not set up"))?;
        let describe = |e: HostError| match e {
            HostError::Denied(m)
            | HostError::Invalid(m)
            | HostError::NotFound(m)
            | HostError::Unavailable(m)
            | HostError::TooLarge(m)
            | HostError::Conflict(m)
            | HostError::Internal(m) => m,
        };
        let decoded = path::decoded(path).map_err(|why| format!("path {path:?} {why}"))?;
        let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
        let req = Request {
            service: name.to_string(),
            method: method.to_string(),
            path: path.to_string(),
            query: query.iter().map(|(n, v)| Pair { name: n.to_string(), value: v.to_string() }).collect(),
            headers: Vec::new(),
            body: None,
        };
        service.login(None).await.map_err(describe)?;
        let (resp, redactor, _) = service.send_once(name, &req, &decoded, &method, None).await.map_err(describe)?;
        let resp = service.read_masked(name, resp, &redactor, false).await.map_err(describe)?;
        Ok((resp.status, resp.body))
    }
}

/// Refuses headers and query names the component may not set, and the
/// form login's own path.
fn check_names(service: &Service, req: &Request, decoded: &str) -> Result<(), HostError> {
    if let Some(login) = service.login_path()
        && decoded.trim_end_matches('/').eq_ignore_ascii_case(login.trim_end_matches('/'))
    {
        return Err(HostError::Invalid(format!("path {} is the service's login, which only the host calls", req.path)));
    }
    for h in &req.headers {
        // Some servers read `X_Api_Key` as `X-Api-Key` (CGI-style names).
        let lower = h.name.to_ascii_lowercase().replace('_', "-");
        let reserved = RESERVED_HEADERS.contains(&lower.as_str())
            || lower.starts_with("proxy-")
            || service.reserved_header().is_some_and(|n| n.to_ascii_lowercase().replace('_', "-") == lower);
        if reserved {
            return Err(HostError::Invalid(format!("header {} is reserved for the host", h.name)));
        }
        if HeaderName::from_bytes(h.name.as_bytes()).is_err() || HeaderValue::from_str(&h.value).is_err() {
            return Err(HostError::Invalid(format!("header {:?} is not a valid HTTP header", h.name)));
        }
    }
    for p in &req.query {
        let reserved = RESERVED_QUERY.iter().any(|n| n.eq_ignore_ascii_case(&p.name))
            || service.reserved_query().is_some_and(|n| n.eq_ignore_ascii_case(&p.name));
        if reserved {
            return Err(HostError::Invalid(format!("query parameter {} is reserved for the host", p.name)));
        }
    }
    Ok(())
}

impl CallCore {
    async fn send(&mut self, import: &str, req: Request) -> Result<Response, HostError> {
        let class = interface_class(import);
        if !self.target.services.contains(&req.service) {
            let reason = format!("service {} is not declared by {}", req.service, self.target.id);
            self.deny(import, class, reason.clone());
            return Err(HostError::Denied(reason));
        }
        let setup = self.setup.clone();
        let service =
            setup.outbound.services.get(&req.service).ok_or_else(|| {
                HostError::NotFound(format!("service {} is not configured by the operator", req.service))
            })?;
        let method = reqwest::Method::from_bytes(req.method.as_bytes())
            .ok()
            .filter(|m| ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"].contains(&m.as_str()))
            .ok_or_else(|| HostError::Invalid(format!("method {:?} is not allowed", req.method)))?;
        let link = if link::is_link(&req.path) {
            let link = link::parse(&req.path, RESERVED_QUERY, service.reserved_query())?;
            if method != reqwest::Method::GET && method != reqwest::Method::HEAD {
                return Err(HostError::Invalid(format!("a link is only read (GET or HEAD), not sent {method}")));
            }
            if !service.owns(&link) {
                return Err(HostError::Invalid(format!("link is not on service {}'s address", req.service)));
            }
            Some(link)
        } else {
            None
        };
        let decoded = match &link {
            Some(link) => link.relative_to(service.base()),
            None => path::decoded(&req.path).map_err(|why| HostError::Invalid(format!("path {:?} {why}", req.path)))?,
        };
        check_names(service, &req, &decoded)?;
        // Classed as the server will route it: the decoded path.
        let is_read = service.config.is_read(method.as_str(), &decoded, req.body.as_deref());
        if is_read && method != reqwest::Method::GET && method != reqwest::Method::HEAD && overrides_method(&req) {
            return Err(HostError::Invalid(
                "a _method field in the body makes some servers route the request as another method".into(),
            ));
        }
        if !is_read && class == EffectClass::Read {
            let reason = format!("{} {} on service {} is a write operation", method, decoded, req.service);
            self.deny(import, interface_class(interface::OUTBOUND_WRITE), reason.clone());
            return Err(HostError::Denied(reason));
        }
        service.login(None).await?;
        if !is_read {
            self.mark_effect();
        }
        let (mut resp, mut redactor, generation) =
            service.send_once(&req.service, &req, &decoded, &method, link.as_ref()).await?;
        let needs_login = matches!(service.config.auth, Auth::FormLogin { .. });
        if needs_login && matches!(resp.status().as_u16(), 401 | 403) {
            // The session expired: log in again (unless another call just
            // did) and retry once.
            service.login(generation).await?;
            (resp, redactor, _) = service.send_once(&req.service, &req, &decoded, &method, link.as_ref()).await?;
        }
        let answer = service.read_masked(&req.service, resp, &redactor, link.is_some()).await?;
        // A 4xx is the service refusing the request: it did not happen.
        if !is_read && (400..500).contains(&answer.status) {
            self.no_effect();
        }
        Ok(answer)
    }
}

impl CallCore {
    /// Sends `req` through `import`, recording it when the call keeps a
    /// record: the request as the component asked for it (the host's
    /// credentials are never part of it) and the status and size answered.
    async fn send_recorded(&mut self, import: &'static str, req: Request) -> Result<Response, HostError> {
        let args = self.args(|| {
            let query: Vec<String> = req.query.iter().map(|p| format!("{}={}", p.name, p.value)).collect();
            let query = if query.is_empty() { String::new() } else { format!("?{}", query.join("&")) };
            let body = req.body.as_ref().map_or(0, Vec::len);
            format!("{} {} {}{query} ({body} body bytes)", req.service, req.method, req.path)
        });
        let shown = |r: &Response| format!("status {}, {} body bytes", r.status, r.body.len());
        host_call!(self, import, "send", args, shown, |call| CallCore::send(call, import, req).await)
    }
}

impl outbound_read::Host for CallCore {
    async fn send(&mut self, req: Request) -> Result<Response, HostError> {
        self.send_recorded(interface::OUTBOUND_READ, req).await
    }
}

impl outbound_write::Host for CallCore {
    async fn send(&mut self, req: Request) -> Result<Response, HostError> {
        self.send_recorded(interface::OUTBOUND_WRITE, req).await
    }
}
