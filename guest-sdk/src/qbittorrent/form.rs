//! Request bodies qBittorrent expects: `application/x-www-form-urlencoded`
//! for the small POST commands and `multipart/form-data` for
//! `torrents/add` (the only way to upload a `.torrent` file). Built by hand
//! because the guest has no HTTP client library, only the host's request.

/// A URL-encoded form body: `(content type, bytes)`.
pub(crate) fn urlencoded(fields: &[(&str, &str)]) -> (String, Vec<u8>) {
    let body = fields
        .iter()
        .map(|(name, value)| format!("{}={}", percent_encode(name), percent_encode(value)))
        .collect::<Vec<_>>()
        .join("&");
    ("application/x-www-form-urlencoded".to_string(), body.into_bytes())
}

/// `application/x-www-form-urlencoded` encoding of one name or value.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => out.push(byte as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// One part of a multipart form.
pub(crate) enum Part {
    Text { name: String, value: String },
    File { name: String, file_name: String, content_type: String, bytes: Vec<u8> },
}

impl Part {
    fn content(&self) -> &[u8] {
        match self {
            Part::Text { value, .. } => value.as_bytes(),
            Part::File { bytes, .. } => bytes,
        }
    }
}

/// A `multipart/form-data` body: `(content type with boundary, bytes)`.
///
/// The boundary must not occur inside any part; a fixed one is lengthened
/// until it does not, which keeps bodies reproducible for tests.
pub(crate) fn multipart(parts: &[Part]) -> (String, Vec<u8>) {
    let mut boundary = String::from("capstan-form-boundary-7d1f3a");
    while parts.iter().any(|p| contains(p.content(), boundary.as_bytes())) {
        boundary.push('x');
    }
    let mut body = Vec::new();
    for part in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        match part {
            Part::Text { name, value } => {
                body.extend_from_slice(
                    format!("Content-Disposition: form-data; name=\"{}\"\r\n\r\n", quote(name)).as_bytes(),
                );
                body.extend_from_slice(value.as_bytes());
            }
            Part::File { name, file_name, content_type, bytes } => {
                body.extend_from_slice(
                    format!(
                        "Content-Disposition: form-data; name=\"{}\"; filename=\"{}\"\r\nContent-Type: {content_type}\r\n\r\n",
                        quote(name),
                        quote(file_name)
                    )
                    .as_bytes(),
                );
                body.extend_from_slice(bytes);
            }
        }
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Makes a name safe inside a quoted header parameter: quotes and line
/// breaks would end the parameter or the header.
fn quote(text: &str) -> String {
    text.chars().map(|c| if matches!(c, '"' | '\r' | '\n' | '\\') { '_' } else { c }).collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urlencoded_escapes_separators() {
        let (kind, body) = urlencoded(&[("hashes", "ab|cd"), ("name", "a b&c=d")]);
        assert_eq!(kind, "application/x-www-form-urlencoded");
        assert_eq!(String::from_utf8(body).unwrap(), "hashes=ab%7Ccd&name=a+b%26c%3Dd");
    }

    #[test]
    fn multipart_boundary_never_occurs_in_a_part() {
        let sneaky = b"--capstan-form-boundary-7d1f3a\r\n".to_vec();
        let (kind, body) = multipart(&[
            Part::Text { name: "savepath".into(), value: "/srv/dl".into() },
            Part::File {
                name: "torrents".into(),
                file_name: "x.torrent".into(),
                content_type: "application/x-bittorrent".into(),
                bytes: sneaky.clone(),
            },
        ]);
        let boundary = kind.strip_prefix("multipart/form-data; boundary=").unwrap();
        assert_eq!(boundary, "capstan-form-boundary-7d1f3ax");
        let text = String::from_utf8_lossy(&body);
        assert!(text.starts_with(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"savepath\"\r\n\r\n/srv/dl\r\n"
        )));
        assert!(text.contains("filename=\"x.torrent\"\r\nContent-Type: application/x-bittorrent\r\n\r\n"));
        assert!(text.ends_with(&format!("\r\n--{boundary}--\r\n")));
        assert!(contains(&body, &sneaky), "the file bytes are sent unchanged");
    }
}
