//! The path a service will see. A component's path is checked before
//! anything is sent: no escape that a server's decoding could turn into a
//! new segment, a dot segment, a query or a second round of decoding, and
//! its decoded form is what the operation table classes. After the URL is
//! built, its decoded path must be the base path followed by exactly that,
//! so nothing the URL parser resolves can leave the base URL.

use percent_encoding::percent_decode_str;

/// Bytes that may not appear percent-encoded: a server that decodes them
/// sees another path than the one classed (`.` and `/` make dot segments
/// and separators, `\` is a separator to some servers, `;` starts path
/// parameters, `?` and `#` end the path, `%` is a second decoding).
const SHAPE_BYTES: &[u8] = b"./\\;?#%";

/// Characters refused as they are, for the same reasons.
const SHAPE_CHARS: &[char] = &['\\', ';', '?', '#'];

/// Characters that compatibility normalisation (NFKC, or a "best fit"
/// code page) turns into ASCII letters, dots or slashes: fullwidth forms,
/// and the dot leaders, small stops and slashes of other blocks.
fn lookalike(c: char) -> bool {
    matches!(
        c,
        '\u{FF00}'
            ..='\u{FFEF}' | '\u{2024}' | '\u{2025}' | '\u{FE52}' | '\u{2044}' | '\u{2215}' | '\u{2216}' | '\u{FE68}'
    )
}

/// Checks a component's path and returns it decoded as a server decodes it.
pub fn decoded(path: &str) -> Result<String, String> {
    if !path.starts_with('/') {
        return Err("must start with /".into());
    }
    if let Some(c) = path.chars().find(|c| c.is_control() || c.is_whitespace() || SHAPE_CHARS.contains(c)) {
        return Err(format!(
            "must not contain {c:?}: no spaces, control characters, \\, ; or a query or fragment (pass query pairs separately)"
        ));
    }
    let bytes = path.as_bytes();
    for (i, _) in path.match_indices('%') {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        let byte = hex.and_then(|h| u8::from_str_radix(h, 16).ok()).ok_or("has a % not followed by two hex digits")?;
        if SHAPE_BYTES.contains(&byte) || byte < 0x20 || byte == 0x7f {
            return Err(format!("must not percent-encode {:?} (as %{})", byte as char, hex.unwrap_or_default()));
        }
    }
    let decoded = percent_decode_str(path)
        .decode_utf8()
        .map_err(|_| "decodes to bytes that are not UTF-8".to_string())?
        .into_owned();
    if decoded.chars().any(char::is_control) {
        return Err("decodes to control characters".into());
    }
    if let Some(c) = decoded.chars().find(|c| lookalike(*c)) {
        return Err(format!("must not contain {c:?}, which some servers fold into an ASCII letter or separator"));
    }
    // Anything compatibility normalisation would change (ligatures, circled
    // and roman-numeral letters, `…`, `℀`) may reach a server as another path.
    if !unicode_normalization::is_nfkc(&decoded) {
        return Err("must be in Unicode normal form NFKC: some servers normalise paths before routing them".into());
    }
    let segments: Vec<&str> = decoded[1..].split('/').collect();
    for (i, seg) in segments.iter().enumerate() {
        if seg.is_empty() && i + 1 < segments.len() {
            return Err("must not contain an empty segment (//), which names a host or is merged by servers".into());
        }
        if *seg == "." || *seg == ".." {
            return Err("must not contain . or .. segments".into());
        }
    }
    Ok(decoded)
}

/// Whether the built URL is the base URL with exactly `decoded` below it.
pub(crate) fn stays_under(base: &reqwest::Url, url: &reqwest::Url, decoded: &str) -> bool {
    let same_origin = url.scheme() == base.scheme()
        && url.host_str() == base.host_str()
        && url.port_or_known_default() == base.port_or_known_default()
        && url.username().is_empty()
        && url.password().is_none();
    let expected = format!("{}{decoded}", percent_decode_str(base.path()).decode_utf8_lossy().trim_end_matches('/'));
    same_origin && percent_decode_str(url.path()).decode_utf8_lossy() == expected
}

#[cfg(test)]
mod tests {
    use super::{decoded, stays_under};

    #[test]
    fn plain_paths_decode_to_themselves() {
        assert_eq!(decoded("/3/search/movie").unwrap(), "/3/search/movie");
        assert_eq!(decoded("/api/v2/torrents/info/").unwrap(), "/api/v2/torrents/info/");
        assert_eq!(decoded("/search/Am%C3%A9lie%20x").unwrap(), "/search/Amélie x");
        assert_eq!(decoded("/a%C2%85b").unwrap_err(), "decodes to control characters");
        assert_eq!(decoded("/search/Am%C3%A9lie").unwrap(), "/search/Amélie");
        assert_eq!(decoded("/%61dd").unwrap(), "/add");
    }

    #[test]
    fn anything_a_server_could_reshape_is_refused() {
        for bad in [
            "relative",
            "//evil.example/x",
            "/a//b",
            "/a/../../etc",
            "/a/./b",
            "/a/%2e%2e/b",
            "/a/%2E/b",
            "/a/.%2e/b",
            "/a%2fb",
            "/a%2Fb",
            "/a%5cb",
            "/a\\b",
            "/a;x=1/b",
            "/a%3bx",
            "/a%3fq=1",
            "/a%23f",
            "/a%252e%252e/b",
            "/a/%c0%ae%c0%ae/b",
            "/a%00b",
            "/a%0d%0aX-Injected:1",
            "/a%",
            "/a%zz",
            "/x?api_key=1",
            "/a b",
            "/a\tb",
            "/ａdmin/delete",
            "/%EF%BD%81dmin",
            "/a\u{2215}..\u{2215}admin",
            "/a/\u{2024}\u{2024}/b",
            "/api/\u{217E}elete",
            "/api/\u{FB01}le",
            "/a\u{2026}/b",
            "/\u{2100}",
        ] {
            assert!(decoded(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn the_built_url_must_stay_under_the_base() {
        let base = reqwest::Url::parse("http://svc.local:8080/api/").unwrap();
        let ok = reqwest::Url::parse("http://svc.local:8080/api/items/1").unwrap();
        assert!(stays_under(&base, &ok, "/items/1"));
        let out = reqwest::Url::parse("http://svc.local:8080/other/items/1").unwrap();
        assert!(!stays_under(&base, &out, "/items/1"));
        let elsewhere = reqwest::Url::parse("http://evil.example/api/items/1").unwrap();
        assert!(!stays_under(&base, &elsewhere, "/items/1"));
    }
}
