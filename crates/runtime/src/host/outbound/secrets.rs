//! Masking the credentials the host injected out of everything that goes
//! back to a component: response headers and bodies, and error messages. A
//! service can reflect a request (an echo endpoint, an error page quoting
//! the query string, a debug dump of headers), so each secret is looked for
//! as sent and as servers commonly re-encode it: percent- and form-encoded,
//! JSON- and HTML-escaped, hex, and base64 at every byte alignment (inside
//! a longer encoded string such as a Basic `Authorization` value). Matching
//! ignores ASCII case, so an upper- or lower-cased echo is caught too.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

/// What a masked secret reads as.
pub(crate) const MASK: &str = "[redacted]";

/// Shortest encoded form looked for: a shorter one would mask ordinary text.
const MIN_FORM: usize = 4;

/// Every run of this many characters of a long secret is masked too, so an
/// answer that quotes a secret cut short (an error page echoing a URL up to
/// a length the component can shift) gives away at most this many less one.
/// Long enough that ordinary text (hashes, ids) practically never matches.
const WINDOW: usize = 12;

/// Masks a fixed set of secrets.
pub(crate) struct Redactor {
    matcher: Option<AhoCorasick>,
}

/// Base64 runs that encode `secret` wherever it starts inside a longer
/// encoded string: the characters that depend on neighbouring bytes are
/// left off at both ends.
fn base64_forms(secret: &[u8]) -> Vec<String> {
    let mut forms = Vec::new();
    for offset in 0..3usize {
        let mut padded = vec![0u8; offset];
        padded.extend_from_slice(secret);
        let start = (offset * 8).div_ceil(6);
        let end = padded.len() * 8 / 6;
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let text = engine.encode(&padded);
            if start < end && end <= text.len() {
                forms.push(text[start..end].to_string());
            }
        }
    }
    forms
}

fn json_forms(secret: &str) -> Vec<String> {
    let escaped = serde_json::to_string(secret).unwrap_or_default();
    let escaped = escaped.trim_matches('"').to_string();
    let unicode: String = secret
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_string() } else { format!("\\u{:04x}", c as u32) })
        .collect();
    vec![escaped.replace('/', "\\/"), escaped, unicode]
}

fn html_form(secret: &str) -> String {
    secret.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

/// Every form `secret` is looked for in.
fn forms(secret: &str) -> Vec<String> {
    let mut forms = vec![secret.to_string(), utf8_percent_encode(secret, NON_ALPHANUMERIC).to_string()];
    forms.push(form_urlencoded::byte_serialize(secret.as_bytes()).collect());
    forms.push(secret.bytes().map(|b| format!("%{b:02X}")).collect());
    forms.push(hex::encode(secret));
    forms.push(html_form(secret));
    forms.extend(json_forms(secret));
    forms.extend(base64_forms(secret.as_bytes()));
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() >= WINDOW + 4 {
        forms.extend(chars.windows(WINDOW).map(|w| w.iter().collect::<String>()));
    }
    forms
}

impl Redactor {
    /// A redactor for `secrets` (empty ones are ignored).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Redactor {
        let mut patterns: Vec<String> = secrets
            .into_iter()
            .filter(|s| !s.is_empty())
            .flat_map(|s| {
                let all = forms(s);
                // A short secret still masks as sent; only its derived forms
                // need enough length to be told from ordinary text.
                all.into_iter().enumerate().filter(move |(i, f)| *i == 0 || f.len() >= MIN_FORM).map(|(_, f)| f)
            })
            .collect();
        patterns.sort();
        patterns.dedup();
        let matcher = (!patterns.is_empty()).then(|| {
            AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::LeftmostLongest)
                .build(&patterns)
                .expect("literal patterns always build")
        });
        Redactor { matcher }
    }

    /// Whether `bytes` holds any form of a secret.
    pub fn finds(&self, bytes: &[u8]) -> bool {
        self.matcher.as_ref().is_some_and(|m| m.is_match(bytes))
    }

    /// `bytes` with every secret form replaced by [`MASK`].
    pub fn bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        match &self.matcher {
            Some(m) if m.is_match(&bytes) => {
                let masks = vec![MASK.as_bytes(); m.patterns_len()];
                m.replace_all_bytes(&bytes, &masks)
            }
            _ => bytes,
        }
    }

    /// `text` with every secret form replaced by [`MASK`].
    pub fn text(&self, text: &str) -> String {
        match &self.matcher {
            Some(m) if m.is_match(text) => m.replace_all(text, &vec![MASK; m.patterns_len()]),
            _ => text.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;

    use super::{MASK, Redactor};

    #[test]
    fn a_secret_is_masked_however_it_was_reencoded() {
        let secret = "s3cr+t/k&y\"9";
        let r = Redactor::new([secret]);
        let basic = STANDARD.encode(format!("admin:{secret}"));
        let texts = [
            format!("key={secret}"),
            format!("url: /x?api_key={}", form_urlencoded::byte_serialize(secret.as_bytes()).collect::<String>()),
            format!("{{\"k\": {}}}", serde_json::to_string(secret).unwrap()),
            format!("Authorization: Basic {basic}"),
            format!("<td>{}</td>", "s3cr+t/k&amp;y&quot;9"),
            format!("hex {}", hex::encode(secret)),
            format!("LOUD {}", secret.to_uppercase()),
        ];
        for text in &texts {
            let masked = r.text(text);
            assert!(masked.contains(MASK), "not masked: {text} -> {masked}");
            assert!(!masked.to_lowercase().contains("s3cr"), "left a trace: {masked}");
        }
        assert_eq!(r.text("nothing here"), "nothing here");
        assert_eq!(r.bytes(b"a s3cr+t/k&y\"9 b".to_vec()), format!("a {MASK} b").into_bytes());
    }

    #[test]
    fn a_secret_cut_short_gives_away_less_than_a_window() {
        let secret = "0123456789abcdefghij";
        let r = Redactor::new([secret]);
        for cut in 12..secret.len() {
            let quoted = format!("invalid key {}...", &secret[..cut]);
            assert!(r.text(&quoted).contains(MASK), "{quoted}");
        }
        assert_eq!(r.text("key 01234567890"), "key 01234567890", "fewer than a window's characters are not masked");
    }

    #[test]
    fn base64_is_caught_at_every_alignment() {
        let secret = "tok-123456";
        let r = Redactor::new([secret]);
        for prefix in ["", "a", "ab", "abc"] {
            let encoded = STANDARD.encode(format!("{prefix}{secret}:tail"));
            assert!(r.text(&encoded).contains(MASK), "{prefix:?}: {encoded}");
        }
    }
}
