//! A tracker's RSS feed as the console sets it up: the member pastes the
//! feed's whole URL, passkey and all. The key parameter (`passkey=…`,
//! `apikey=…`, …) is the secret, stored as `name=value` (`=` alone for a
//! feed with no key, so saving one replaces a key stored before); the
//! URL's origin is the entry's base URL and the rest, without the key, its
//! `feed_path`, both shown on the page. The service is the origin with the
//! key as a query credential, and `feed_path` is `release.search`'s
//! setting `rss_path`.

/// Query parameter names that carry a tracker's key (compared ignoring
/// case), as `release.search` strips them from links.
const KEY_PARAMS: &[&str] =
    &["passkey", "pass_key", "torrent_pass", "authkey", "apikey", "api_key", "rsskey", "key", "token", "auth"];

/// Longest feed URL taken.
const MAX_URL: usize = 2000;

/// The capability and setting that hold the feed's path.
pub const FEED_PATH: (&str, &str) = ("release.search", "rss_path");

fn is_key(name: &str) -> bool {
    KEY_PARAMS.iter().any(|k| k.eq_ignore_ascii_case(name))
}

/// A pasted feed URL: its origin, its path and query without the key, and
/// the key as stored.
pub fn split_feed_url(typed: &str) -> Result<(String, String, String), String> {
    let typed = typed.trim();
    let not_a_feed = || {
        "paste the feed's whole URL as the tracker gives it, https://tracker.example/rss.php?passkey=… \
         (on most trackers: RSS, or your profile's feed link)"
            .to_string()
    };
    if typed.len() > MAX_URL {
        return Err(format!("a feed URL is at most {MAX_URL} characters"));
    }
    let url = reqwest::Url::parse(typed).map_err(|_| not_a_feed())?;
    if !matches!(url.scheme(), "http" | "https") || !url.has_host() || !url.username().is_empty() {
        return Err(not_a_feed());
    }
    let pairs: Vec<(String, String)> = url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let keys: Vec<&(String, String)> = pairs.iter().filter(|(k, _)| is_key(k)).collect();
    let key = match keys.as_slice() {
        [] => "=".to_string(),
        [(name, value)] if !value.is_empty() => format!("{name}={value}"),
        [(name, _)] => return Err(format!("the feed URL's {name} is empty: paste it as the tracker gives it")),
        _ => return Err("the feed URL carries more than one key; paste it as the tracker gives it".into()),
    };
    // A key in the path (…/rss/<passkey>) cannot be kept from the page.
    let keyish = |s: &str| s.len() >= 20 && s.chars().all(|c| c.is_ascii_alphanumeric());
    if key == "=" && url.path_segments().into_iter().flatten().any(keyish) {
        return Err("the feed URL seems to carry its key in its path, which Capstan cannot keep secret; use the \
                    tracker's feed link with a passkey parameter"
            .into());
    }
    let mut keyless = url.clone();
    keyless.set_fragment(None);
    let rest: Vec<&(String, String)> = pairs.iter().filter(|(k, _)| !is_key(k)).collect();
    if rest.is_empty() {
        keyless.set_query(None);
    } else {
        keyless.query_pairs_mut().clear().extend_pairs(rest.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    }
    let path = match keyless.query() {
        Some(query) => format!("{}?{query}", keyless.path()),
        None => keyless.path().to_string(),
    };
    Ok((url.origin().ascii_serialization(), path, key))
}

/// Checks a feed path given beside the origin (a form saved again, or the
/// API): on the address, and without a key, which only the secret holds.
pub fn check_path(path: &str) -> Result<(), String> {
    let path = path.trim();
    let fits = path.len() <= MAX_URL && path.starts_with('/') && !path.starts_with("//");
    let url = reqwest::Url::parse(&format!("http://feed{path}")).ok().filter(|_| fits);
    let Some(url) = url else {
        return Err("feedPath must be the feed's path on its address, starting with / (such as /rss.php?cat=5)".into());
    };
    match url.query_pairs().find(|(k, _)| is_key(k)) {
        Some((name, _)) => {
            Err(format!("feedPath carries a key ({name}); paste the feed URL whole as the secret instead"))
        }
        None => Ok(()),
    }
}

/// The origin of a feed's base URL, the service's base URL.
pub fn origin(base_url: &str) -> Result<String, String> {
    match reqwest::Url::parse(base_url.trim()) {
        Ok(url) if url.has_host() => Ok(url.origin().ascii_serialization()),
        _ => Err(format!("{base_url:?} is not a feed's address: paste the feed URL whole, https://…")),
    }
}

/// The stored key as the query credential's name and value; `None` for a
/// feed with no key.
pub fn key_of(stored: &str) -> Option<(String, String)> {
    let (name, value) = stored.split_once('=')?;
    (!name.is_empty() && !value.is_empty()).then(|| (name.to_string(), value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Auth, SecretRef};
    use crate::setup::kinds::{ServiceEntry, ServiceKind, service_config, settings_of, with_typed_secret};

    #[test]
    fn a_feed_becomes_its_origin_with_the_passkey_and_a_path_setting() {
        let pasted = "https://tracker.example:8443/feeds/rss.php?passkey=ab12cd34&cat=5";
        let (entry, key) = with_typed_secret(ServiceKind::Rss, &ServiceEntry::at(""), pasted).unwrap();
        assert_eq!(entry.base_url, "https://tracker.example:8443");
        assert_eq!(entry.feed_path.as_deref(), Some("/feeds/rss.php?cat=5"));
        let service = service_config(ServiceKind::Rss, &entry, &key).unwrap();
        assert_eq!(service.base_url, "https://tracker.example:8443");
        assert_eq!(service.auth, Auth::Query { name: "passkey".into(), value: SecretRef("ab12cd34".into()) });
        let settings = settings_of(ServiceKind::Rss, &entry);
        assert_eq!(settings, [("release.search", "rss_path", "/feeds/rss.php?cat=5".to_string())]);
        let public = service_config(ServiceKind::Rss, &entry, "=").unwrap();
        assert_eq!(public.auth, Auth::None);
    }

    #[test]
    fn a_pasted_feed_url_is_kept_as_its_origin_path_and_key() {
        let pasted = "https://tracker.example/rss.php?cat=5&PassKey=ab12cd&uid=7#x";
        let (origin, path, key) = split_feed_url(pasted).unwrap();
        assert_eq!((origin.as_str(), path.as_str()), ("https://tracker.example", "/rss.php?cat=5&uid=7"));
        assert_eq!(key_of(&key), Some(("PassKey".into(), "ab12cd".into())));
        // A public feed has no key, stored so that it replaces an old one.
        let (_, path, key) = split_feed_url("https://nyaa.example/?page=rss&q=dune").unwrap();
        assert_eq!((path.as_str(), key.as_str(), key_of(&key)), ("/?page=rss&q=dune", "=", None));
        for wrong in [
            "tracker.example/rss.php",
            "ftp://tracker.example/rss",
            "https://user:pw@tracker.example/rss",
            "https://t.example/rss?passkey=",
            "https://t.example/rss?passkey=a&apikey=b",
            "https://t.example/rss/0123456789abcdef0123456789",
        ] {
            assert!(split_feed_url(wrong).is_err(), "{wrong}");
        }
        assert!(check_path("/rss.php?cat=5").is_ok());
        for wrong in ["rss.php", "//evil.example/rss", "/rss.php?passkey=abc", "/rss?x=1&TOKEN=t"] {
            assert!(check_path(wrong).is_err(), "{wrong}");
        }
    }
}
