//! Text rules every layer shares. `blank` is what `str::trim` leaves
//! empty; `NOT_BLANK_PATTERN` says the same as a regular expression a JSON
//! Schema can carry, so a document and the check agree on every character.
//! The URL patterns say what of a URL a schema can: its scheme, where its
//! host starts, and what may not follow it; whether the host is one a URL
//! can have (a port up to 65535, a well-formed address) is the URL
//! parser's to say.

/// Every character `char::is_whitespace` (and so `str::trim`) counts as
/// white space, as the body of a regular-expression class.
pub const WHITE_SPACE: &str =
    "\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";

/// White space as `str::trim` counts it, and the C0 controls and spaces a
/// URL parser ignores at a URL's ends: what may surround a service's URL.
const URL_EDGE: &str = "\\u0000-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";

/// An `http://` or `https://` URL (the scheme in any case) as a URL parser
/// reads it: C0 controls and spaces around it are ignored, its host starts
/// right after the slashes, and the host and port hold none.
pub fn http_url_pattern() -> String {
    let c0 = "\\u0000-\\u0020";
    format!("^[{c0}]*[Hh][Tt][Tt][Pp][Ss]?://[^{c0}/?#\\\\@:][^{c0}/?#\\\\]*([/?#\\\\]|[{c0}]*$)")
}

/// A service's base URL as the host takes it (trimmed, then parsed): an
/// `http://` or `https://` URL, its host, and at most a path; no
/// credentials, query or fragment.
pub fn service_url_pattern() -> String {
    let host = format!("[^{URL_EDGE}/?#\\\\@:][^{URL_EDGE}/?#\\\\@]*");
    format!("^[{URL_EDGE}]*[Hh][Tt][Tt][Pp][Ss]?://{host}([/\\\\][^?#]*)?[{URL_EDGE}]*$")
}

/// An absolute path as the host takes one: `/` first, once white space is
/// trimmed.
pub fn absolute_path_pattern() -> String {
    format!("^[{WHITE_SPACE}]*/")
}

/// A pattern a text matches when it holds something besides white space.
pub fn not_blank_pattern() -> String {
    format!("[^{WHITE_SPACE}]")
}

/// The JSON Schema of a text that is not blank.
pub fn not_blank_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new().schema_type(Type::String).pattern(Some(not_blank_pattern())).build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_refuses_exactly_what_trim_leaves_empty() {
        let pattern = regex::Regex::new(&not_blank_pattern()).unwrap();
        for c in (0..0x3100u32).filter_map(char::from_u32) {
            let text = c.to_string();
            assert_eq!(pattern.is_match(&text), !text.trim().is_empty(), "U+{:04X}", c as u32);
        }
    }

    /// What the server's parser makes of `url`: `(a setting's URL, a
    /// service's base URL)`, each taken or not.
    fn parsed(url: &str) -> (bool, bool) {
        let http = |u: &str| reqwest::Url::parse(u).ok().filter(|u| matches!(u.scheme(), "http" | "https"));
        let setting = http(url).is_some();
        let service = http(url.trim().trim_end_matches('/')).is_some_and(|u| {
            u.query().is_none() && u.fragment().is_none() && u.username().is_empty() && u.password().is_none()
        });
        (setting, service)
    }

    #[test]
    fn a_url_the_patterns_allow_is_one_the_parser_takes() {
        let setting = regex::Regex::new(&http_url_pattern()).unwrap();
        let service = regex::Regex::new(&service_url_pattern()).unwrap();
        for (url, as_setting, as_service) in [
            ("http://127.0.0.1:9/v1", true, true),
            ("HTTPS://api.example.org/3/", true, true),
            ("  https://api.example.org/3  ", true, true),
            ("\u{3000}https://x\n", false, true),
            ("http://[::1]:8080/a b/", true, true),
            ("http://x/a@b\\c", true, true),
            ("http://x?q=1", true, false),
            ("http://x/#top", true, false),
            ("https://user:pass@x/", true, false),
            ("ftp://x", false, false),
            ("http://", false, false),
            ("http:///x", false, false),
            ("http://:80", false, false),
            ("http://x y", false, false),
            ("http://x:8080 ", true, true),
            ("", false, false),
        ] {
            assert_eq!((setting.is_match(url), service.is_match(url)), (as_setting, as_service), "{url:?}");
            let (takes_setting, takes_service) = parsed(url);
            assert!(!as_setting || takes_setting, "{url:?} fits a setting's pattern, not its parser");
            assert!(!as_service || takes_service, "{url:?} fits a service's pattern, not its parser");
        }
    }
}
