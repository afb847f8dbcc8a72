//! Headers every answer carries: `X-Content-Type-Options: nosniff` (a
//! browser never guesses a type other than the one given),
//! `Referrer-Policy: no-referrer` (a link followed from the console does
//! not tell the other site where it was), `X-Frame-Options: DENY` on the
//! console's pages (with the policy's `frame-ancestors 'none'`, for older
//! browsers), and `Cache-Control: no-store` on every API answer, since
//! they carry the library, the audit log and the settings.

use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

pub async fn set(request: Request, next: Next) -> Response {
    let api = request.uri().path().starts_with("/api/") || request.uri().path() == "/metrics";
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    if api {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    } else {
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    response
}
