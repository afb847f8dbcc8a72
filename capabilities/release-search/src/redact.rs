//! Removing credentials from links before they leave the component. Torznab
//! feeds often carry the indexer's own key in download links
//! (`?apikey=...`, `jackett_apikey=...`) and private trackers a passkey in
//! the tracker URLs of a magnet. Those answers go to the agent, the ledger
//! and the audit log, so the key is taken out: in a download link its value
//! becomes the slot `[redacted]`, and `download.submit` fetches the link
//! through the host, which fills the slot with the indexer's key again.

/// Query parameter names that carry a credential (compared ignoring case).
const SECRET_PARAMS: &[&str] =
    &["apikey", "api_key", "jackett_apikey", "passkey", "pass_key", "torrent_pass", "authkey", "auth", "token", "key"];

pub(crate) fn is_secret(name: &str) -> bool {
    SECRET_PARAMS.iter().any(|s| s.eq_ignore_ascii_case(name))
}

/// What a credential's value becomes in a download link: the host fills a
/// parameter with exactly this value with the indexer's key when it
/// fetches the link (its own masking writes the same text).
const SLOT: &str = "%5Bredacted%5D";

/// `url` without credentials: in a download link each credential's value
/// becomes a slot the host fills again, so links that need the key in a
/// parameter of their own (Jackett's `jackett_apikey`) still work; a
/// magnet loses them, and tracker URLs inside its `tr=` parameters are
/// cleaned the same way, since only the host may fetch with a key.
pub fn strip_credentials(url: &str) -> String {
    clean(url, true)
}

/// `url` with each credential made a slot (`slots`) or removed.
fn clean(url: &str, slots: bool) -> String {
    let slots = slots && !url.trim_start().to_ascii_lowercase().starts_with("magnet:");
    let (base, fragment) = match url.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (url, None),
    };
    let Some((path, query)) = base.split_once('?') else { return url.to_string() };
    let magnet = path.eq_ignore_ascii_case("magnet:");
    let kept: Vec<String> = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter(|pair| slots || !is_secret(pair.split_once('=').map_or(*pair, |(name, _)| name)))
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if is_secret(name) => format!("{name}={SLOT}"),
            None if is_secret(pair) => format!("{pair}={SLOT}"),
            Some((name, value)) if magnet && name.eq_ignore_ascii_case("tr") => {
                format!("{name}={}", encode(&clean(&decode(value), false)))
            }
            _ => pair.to_string(),
        })
        .collect();
    let mut out = path.to_string();
    if !kept.is_empty() {
        out.push('?');
        out.push_str(&kept.join("&"));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

pub(crate) fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                match u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"), 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::strip_credentials;

    #[test]
    fn indexer_keys_in_download_links_become_slots_the_host_fills() {
        assert_eq!(
            strip_credentials("http://127.0.0.1:9117/dl/x/?jackett_apikey=s3cret&path=abc&file=Dune"),
            "http://127.0.0.1:9117/dl/x/?jackett_apikey=%5Bredacted%5D&path=abc&file=Dune"
        );
        assert_eq!(
            strip_credentials("https://idx.example/api?t=get&id=7&APIKEY=s3cret"),
            "https://idx.example/api?t=get&id=7&APIKEY=%5Bredacted%5D"
        );
        assert_eq!(
            strip_credentials("https://idx.example/get?apikey=%5Bredacted%5D"),
            "https://idx.example/get?apikey=%5Bredacted%5D",
            "a key the host masked already stays a slot"
        );
        assert_eq!(strip_credentials("https://idx.example/file.torrent"), "https://idx.example/file.torrent");
    }

    #[test]
    fn tracker_passkeys_are_removed_from_magnets() {
        let magnet =
            "magnet:?xt=urn:btih:abcdef&dn=Dune&tr=https%3A%2F%2Ftracker.example%2Fannounce%3Fpasskey%3Ds3cret";
        let clean = strip_credentials(magnet);
        assert!(!clean.contains("s3cret"), "{clean}");
        assert!(
            clean.starts_with("magnet:?xt=urn:btih:abcdef&dn=Dune&tr=https%3A%2F%2Ftracker.example%2Fannounce"),
            "{clean}"
        );
    }
}
