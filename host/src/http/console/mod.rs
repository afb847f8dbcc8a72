//! The operator console: one page, its script and its stylesheet, built
//! into the binary and served at `/`. The page signs in with a console
//! session and then uses the same `/api/v1` endpoints as any client; it
//! holds no authority of its own. Responses forbid inline script and
//! framing, so the page runs only the script served here.

use axum::http::header;
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("index.html");
const SCRIPT: &str = include_str!("console.js");
const RUNS: &str = include_str!("runs.js");
const LIBRARY: &str = include_str!("library.js");
const SERVICES: &str = include_str!("services.js");
const STYLE: &str = include_str!("console.css");

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

/// `GET /`: the console page.
pub async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX)
}

/// `GET /console.js`
pub async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

/// `GET /runs.js`
pub async fn runs() -> Response {
    asset("text/javascript; charset=utf-8", RUNS)
}

/// `GET /library.js`
pub async fn library() -> Response {
    asset("text/javascript; charset=utf-8", LIBRARY)
}

/// `GET /services.js`
pub async fn services() -> Response {
    asset("text/javascript; charset=utf-8", SERVICES)
}

/// `GET /console.css`
pub async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE)
}
