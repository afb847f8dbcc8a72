//! Torznab over the host's `outbound-read`: one GET of `/api` on a named
//! indexer service, and the translation of every way it can go wrong into
//! one sentence a user can act on. The API key is injected by the host.

pub mod caps;
pub mod feed;
pub mod xml;

use capstan_sdk::HostError;
use capstan_sdk::host::{self, Request, Response};

use xml::DocError;

/// Why one indexer gave no results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexerError {
    /// The operator did not configure this service: not an error, the
    /// indexer simply is not there.
    NotConfigured,
    /// Anything else, said for a human.
    Failed(String),
}

/// GETs `/api` on `service` with `params` (`t` first) and returns the body
/// text of a successful answer.
pub fn get(service: &str, params: &[(&'static str, String)]) -> Result<String, IndexerError> {
    let mut req = Request::get(service, "/api");
    for (name, value) in params {
        req = req.query(name, value.clone());
    }
    let resp = host::outbound::read(req).map_err(host_error)?;
    check_status(&resp)?;
    Ok(String::from_utf8_lossy(&resp.body).into_owned())
}

pub(crate) fn host_error(err: HostError) -> IndexerError {
    match err {
        HostError::NotFound(_) => IndexerError::NotConfigured,
        HostError::Unavailable(m) => IndexerError::Failed(format!("could not be reached: {m}")),
        HostError::TooLarge(m) => IndexerError::Failed(format!("answered too much: {m}")),
        HostError::Denied(m) => IndexerError::Failed(format!("was refused by the host: {m}")),
        HostError::Invalid(m) | HostError::Conflict(m) | HostError::Internal(m) => {
            IndexerError::Failed(format!("request failed: {m}"))
        }
    }
}

fn header<'a>(resp: &'a Response, name: &str) -> Option<&'a str> {
    resp.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim())
}

pub(crate) fn check_status(resp: &Response) -> Result<(), IndexerError> {
    let status = resp.status;
    if (200..300).contains(&status) {
        return Ok(());
    }
    // Jackett and Prowlarr put a Torznab error element in most failures.
    let said = xml::error_in(&String::from_utf8_lossy(&resp.body));
    let message = match status {
        401 | 403 => match said {
            Some((code, description)) => format!("refused the configured API key (error {code}: {description})"),
            None => format!("refused the configured API key (status {status})"),
        },
        429 => match header(resp, "retry-after") {
            Some(seconds) => format!("rate-limited the search; retry after {seconds} s"),
            None => "rate-limited the search; retry later".to_string(),
        },
        _ => match said {
            Some(error) => describe(error.0, &error.1),
            None if status >= 500 => format!("failed with status {status}"),
            None => format!("answered status {status}"),
        },
    };
    Err(IndexerError::Failed(message))
}

/// Says what a Torznab error code means for the user.
pub fn describe(code: u32, description: &str) -> String {
    let meaning = match code {
        100..=102 => "refused the configured API key",
        200..=203 => "rejected the search parameters",
        500 | 501 => "rate-limited the search",
        910 => "has its API disabled",
        _ => "reported an error",
    };
    format!("{meaning} (error {code}: {description})")
}

/// The message for a body that failed to parse.
pub fn doc_error(what: &str, err: DocError) -> String {
    match err {
        DocError::Torznab { code, description } => describe(code, &description),
        DocError::Malformed(why) => format!("answered a {what} that is not valid Torznab XML: {why}"),
    }
}
