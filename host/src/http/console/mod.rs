//! The operator console: one page, its scripts, its stylesheet and its
//! icon, built into the binary and served at `/`. The page signs in with a
//! console session and then uses the same `/api/v1` endpoints as any
//! client; it holds no authority of its own. Responses forbid inline
//! script and framing, so the page runs only the scripts served here.

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::settings::Settings;

/// The setting that names where posters come from.
pub(crate) const POSTER_BASE_URL: &str = "library.poster_base_url";

/// Every file of the console: its path, content type and text.
const FILES: &[(&str, &str, &str)] = &[
    ("/", "text/html; charset=utf-8", include_str!("index.html")),
    ("/console.js", JS, include_str!("console.js")),
    ("/stream.js", JS, include_str!("stream.js")),
    ("/runs.js", JS, include_str!("runs.js")),
    ("/library.js", JS, include_str!("library.js")),
    ("/episodes.js", JS, include_str!("episodes.js")),
    ("/calendar.js", JS, include_str!("calendar.js")),
    ("/profiles.js", JS, include_str!("profiles.js")),
    ("/blocklist.js", JS, include_str!("blocklist.js")),
    ("/services.js", JS, include_str!("services.js")),
    ("/notifications.js", JS, include_str!("notifications.js")),
    ("/settings.js", JS, include_str!("settings.js")),
    ("/grants.js", JS, include_str!("grants.js")),
    ("/decisions.js", JS, include_str!("decisions.js")),
    ("/skills.js", JS, include_str!("skills.js")),
    ("/console.css", "text/css; charset=utf-8", include_str!("console.css")),
    ("/favicon.svg", "image/svg+xml", include_str!("favicon.svg")),
    // Browsers ask for this path whatever the page links.
    ("/favicon.ico", "image/svg+xml", include_str!("favicon.svg")),
];

const JS: &str = "text/javascript; charset=utf-8";

/// Scripts, styles and requests only from this origin, images also from
/// TMDB's and the configured poster host; never framed.
fn policy(posters: Option<&str>) -> String {
    let mut images = "'self' https://image.tmdb.org".to_string();
    if let Some(origin) = posters {
        images.push(' ');
        images.push_str(origin);
    }
    format!(
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src {images}; frame-ancestors 'none'; \
         base-uri 'none'; form-action 'self'"
    )
}

/// The origin (scheme, host, port) of the configured poster host, when one
/// is set and is an http(s) URL: all a policy may name of it.
async fn poster_origin(settings: &Settings) -> Option<String> {
    let value = settings.get(POSTER_BASE_URL).await.ok()?;
    let url = reqwest::Url::parse(value.as_str()?).ok()?;
    matches!(url.scheme(), "http" | "https").then(|| url.origin().ascii_serialization())
}

fn asset(content_type: &'static str, body: &'static str, policy: &str) -> Response {
    let policy = HeaderValue::from_str(policy).unwrap_or_else(|_| HeaderValue::from_static("default-src 'self'"));
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CONTENT_SECURITY_POLICY, policy),
            (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

/// A route for each console file; the page's policy lets posters come
/// from the host the settings name.
pub fn routes<S: Clone + Send + Sync + 'static>(settings: Arc<Settings>) -> Router<S> {
    FILES.iter().fold(Router::new(), |router, &(path, content_type, body)| {
        let settings = settings.clone();
        router.route(
            path,
            get(move || async move {
                let posters = poster_origin(&settings).await;
                asset(content_type, body, &policy(posters.as_deref()))
            }),
        )
    })
}
