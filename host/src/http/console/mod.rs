//! The operator console: one page, its scripts, its stylesheet and its
//! icon, built into the binary and served at `/`. The page signs in with a
//! console session and then uses the same `/api/v1` endpoints as any
//! client; it holds no authority of its own. Responses forbid inline
//! script and framing, so the page runs only the scripts served here.

use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// Every file of the console: its path, content type and text.
const FILES: &[(&str, &str, &str)] = &[
    ("/", "text/html; charset=utf-8", include_str!("index.html")),
    ("/console.js", JS, include_str!("console.js")),
    ("/stream.js", JS, include_str!("stream.js")),
    ("/runs.js", JS, include_str!("runs.js")),
    ("/library.js", JS, include_str!("library.js")),
    ("/services.js", JS, include_str!("services.js")),
    ("/settings.js", JS, include_str!("settings.js")),
    ("/grants.js", JS, include_str!("grants.js")),
    ("/decisions.js", JS, include_str!("decisions.js")),
    ("/console.css", "text/css; charset=utf-8", include_str!("console.css")),
    ("/favicon.svg", "image/svg+xml", include_str!("favicon.svg")),
    // Browsers ask for this path whatever the page links.
    ("/favicon.ico", "image/svg+xml", include_str!("favicon.svg")),
];

const JS: &str = "text/javascript; charset=utf-8";

/// Scripts, styles and requests only from this origin (and TMDB's posters);
/// never framed.
const POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' https://image.tmdb.org; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// A route for each console file.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    FILES.iter().fold(Router::new(), |router, &(path, content_type, body)| {
        router.route(path, get(move || async move { asset(content_type, body) }))
    })
}
