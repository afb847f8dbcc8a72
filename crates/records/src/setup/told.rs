//! The services the sweeps tell of what happened, as the console sets
//! them up: the notification targets (a webhook, ntfy, Telegram, Discord)
//! and the media servers (Jellyfin, Emby, Plex). What each one's form
//! names beside its URL and secret (ntfy's topic, Telegram's chat, the
//! library folder as a server sees it) is its capability's setting; a
//! Discord webhook is pasted as its whole URL and kept as its id and token.

use super::kinds::{ServiceEntry, ServiceKind};

/// The notification targets' kinds, and the capability each sends with.
pub const NOTIFY_KINDS: &[(ServiceKind, &str)] = &[
    (ServiceKind::Webhook, "notify.webhook"),
    (ServiceKind::Ntfy, "notify.ntfy"),
    (ServiceKind::Telegram, "notify.telegram"),
    (ServiceKind::Discord, "notify.discord"),
];

/// The capability a notification target sends with.
pub fn notifier_of(kind: ServiceKind) -> Option<&'static str> {
    NOTIFY_KINDS.iter().find(|(k, _)| *k == kind).map(|(_, c)| *c)
}

/// The capability the sweeps act on a service with, when it is one they
/// tell of what happened (a notification target, a media server): saving
/// it gives that capability a grant.
pub fn told_by(kind: ServiceKind) -> Option<&'static str> {
    match kind {
        ServiceKind::Jellyfin | ServiceKind::Emby | ServiceKind::Plex => Some(MEDIA_SERVER_REFRESH),
        kind => notifier_of(kind),
    }
}

/// The capability a media server is asked to rescan through.
pub const MEDIA_SERVER_REFRESH: &str = "mediaserver.refresh";

/// Whether a kind works without a secret: a webhook or ntfy topic that
/// takes no token, Transmission without a password, a feed with no key.
pub fn secret_optional(kind: ServiceKind) -> bool {
    matches!(kind, ServiceKind::Webhook | ServiceKind::Ntfy | ServiceKind::Transmission | ServiceKind::Rss)
}

/// Where a Discord webhook's URL keeps its id and token.
const DISCORD_WEBHOOKS: &str = "/api/webhooks/";

/// The settings an entry gives its notification capability: (capability,
/// setting, value). A webhook's URL is split: its path is `notify.webhook`'s
/// setting `path`, so the URL is posted to exactly as typed.
pub fn settings_of(kind: ServiceKind, entry: &ServiceEntry) -> Vec<(&'static str, &'static str, String)> {
    let given = |v: &Option<String>| v.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);
    match kind {
        ServiceKind::Ntfy => given(&entry.topic).map(|t| ("notify.ntfy", "topic", t)).into_iter().collect(),
        ServiceKind::Telegram => given(&entry.chat_id).map(|c| ("notify.telegram", "chat_id", c)).into_iter().collect(),
        ServiceKind::Jellyfin => {
            given(&entry.library_path).map(|p| (MEDIA_SERVER_REFRESH, "jellyfin_library", p)).into_iter().collect()
        }
        ServiceKind::Emby => {
            given(&entry.library_path).map(|p| (MEDIA_SERVER_REFRESH, "emby_library", p)).into_iter().collect()
        }
        ServiceKind::Plex => {
            given(&entry.library_path).map(|p| (MEDIA_SERVER_REFRESH, "plex_library", p)).into_iter().collect()
        }
        ServiceKind::Webhook => match reqwest::Url::parse(entry.base_url.trim()) {
            Ok(url) if url.path() != "/" => vec![("notify.webhook", "path", url.path().to_string())],
            _ => Vec::new(),
        },
        ServiceKind::Rss => {
            let (capability, setting) = super::feed::FEED_PATH;
            given(&entry.feed_path).map(|p| (capability, setting, p)).into_iter().collect()
        }
        _ => Vec::new(),
    }
}

/// Checks what a target's form names beside its URL and secret, as its
/// capability will read it: ntfy's topic and Telegram's chat.
pub fn check_entry(kind: ServiceKind, entry: &ServiceEntry) -> Result<(), String> {
    let given = |v: &Option<String>| v.as_deref().map(str::trim).unwrap_or_default().to_string();
    match kind {
        ServiceKind::Ntfy => {
            let topic = given(&entry.topic);
            let fits = (1..=64).contains(&topic.len())
                && topic.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !fits {
                return Err("topic must be 1 to 64 letters, digits, - or _ (the topic you subscribe to)".into());
            }
        }
        ServiceKind::Telegram => {
            let chat = given(&entry.chat_id);
            let digits = chat.strip_prefix('-').unwrap_or(&chat);
            let numeric = (1..=20).contains(&digits.len()) && digits.chars().all(|c| c.is_ascii_digit());
            let username = chat.strip_prefix('@').is_some_and(|u| {
                (5..=32).contains(&u.len()) && u.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
            if !numeric && !username {
                return Err("chatId must be the chat's number (such as 123456789 or -1001234567890) or a channel's \
                            @username"
                    .into());
            }
        }
        ServiceKind::Rss => {
            let path = given(&entry.feed_path);
            if !path.is_empty() {
                super::feed::check_path(&path)?;
            }
        }
        ServiceKind::Jellyfin | ServiceKind::Emby | ServiceKind::Plex => {
            let path = given(&entry.library_path);
            let absolute = path.starts_with('/') || path.get(1..3) == Some(":\\");
            if !path.is_empty() && (!absolute || path.chars().count() > 1000 || path.chars().any(char::is_control)) {
                return Err("libraryPath must be the library folder's absolute path as the media server sees it \
                            (such as /media/library), or empty when it sees the same path as Capstan"
                    .into());
            }
        }
        _ => {}
    }
    Ok(())
}

/// A typed secret as it is stored, and the entry it goes with: a Discord
/// webhook's whole URL is its base URL and its `<id>/<token>`, a tracker
/// feed's whole URL its keyless URL and its key; any other kind's is kept
/// as it is.
pub fn with_typed_secret(
    kind: ServiceKind,
    entry: &ServiceEntry,
    typed: &str,
) -> Result<(ServiceEntry, String), String> {
    let typed = typed.trim();
    if kind == ServiceKind::Rss {
        let (origin, path, key) = super::feed::split_feed_url(typed)?;
        return Ok((ServiceEntry { base_url: origin, feed_path: Some(path), ..entry.clone() }, key));
    }
    if kind != ServiceKind::Discord {
        return Ok((entry.clone(), typed.to_string()));
    }
    let (base, hook) = discord_webhook(typed, &entry.base_url)?;
    Ok((ServiceEntry { base_url: base, ..entry.clone() }, hook))
}

/// A Discord webhook's URL as typed (or its `<id>/<token>` alone): the
/// base URL it is under and the `<id>/<token>` that is its secret.
pub fn discord_webhook(typed: &str, base_url: &str) -> Result<(String, String), String> {
    let typed = typed.trim().trim_end_matches('/');
    let (base, secret) = match typed.find(DISCORD_WEBHOOKS) {
        Some(at) if typed.starts_with("https://") || typed.starts_with("http://") => {
            let base = &typed[..at + DISCORD_WEBHOOKS.len() - 1];
            (base.to_string(), typed[at + DISCORD_WEBHOOKS.len()..].split(['?', '#']).next().unwrap_or_default())
        }
        _ => (base_url.trim().trim_end_matches('/').to_string(), typed),
    };
    let parts: Vec<&str> = secret.split('/').collect();
    let fits = parts.len() == 2
        && parts[0].len() <= 30
        && !parts[0].is_empty()
        && parts[0].chars().all(|c| c.is_ascii_digit())
        && crate::config::path_safe(parts[1], false);
    if !fits {
        return Err(
            "paste the Discord webhook's whole URL, https://discord.com/api/webhooks/<id>/<token> (a channel's \
                    Settings → Integrations → Webhooks → Copy Webhook URL)"
                .into(),
        );
    }
    Ok((base, secret.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Auth, SecretRef};
    use crate::setup::kinds::service_config;

    #[test]
    fn a_discord_webhook_is_pasted_whole_and_kept_as_its_id_and_token() {
        let base = "https://discord.com/api/webhooks";
        let pasted = "https://discord.com/api/webhooks/112233445566778899/tok-EN_123?wait=true";
        let (entry, secret) = with_typed_secret(ServiceKind::Discord, &ServiceEntry::at(base), pasted).unwrap();
        assert_eq!((entry.base_url.as_str(), secret.as_str()), (base, "112233445566778899/tok-EN_123"));
        let service = service_config(ServiceKind::Discord, &entry, &secret).unwrap();
        assert_eq!(service.auth, Auth::Path { value: SecretRef(secret), prefix: String::new() });
        for wrong in ["https://discord.com/api/webhooks/abc/tok", "112233/tok/more", "https://example.net/x", "tok"] {
            assert!(with_typed_secret(ServiceKind::Discord, &ServiceEntry::at(base), wrong).is_err(), "{wrong}");
        }
    }

    #[test]
    fn a_targets_form_becomes_its_service_and_its_capabilitys_setting() {
        let hook = ServiceEntry::at("https://hooks.example.net/capstan/7f3a");
        let service = service_config(ServiceKind::Webhook, &hook, "").unwrap();
        assert_eq!((service.base_url.as_str(), &service.auth), ("https://hooks.example.net", &Auth::None));
        assert_eq!(settings_of(ServiceKind::Webhook, &hook), [("notify.webhook", "path", "/capstan/7f3a".to_string())]);
        let bot =
            service_config(ServiceKind::Telegram, &ServiceEntry::at("https://api.telegram.org"), "1:AA-b").unwrap();
        assert_eq!(bot.auth, Auth::Path { value: SecretRef("1:AA-b".into()), prefix: "bot".into() });
        let at = ServiceEntry::at("https://api.telegram.org");
        assert!(service_config(ServiceKind::Telegram, &at, "1:AA/../b").is_err());
        let chat = |c: &str| ServiceEntry { chat_id: Some(c.into()), ..at.clone() };
        assert!(check_entry(ServiceKind::Telegram, &chat("-1001234567890")).is_ok());
        assert!(check_entry(ServiceKind::Telegram, &chat("@capstan_news")).is_ok());
        assert!(check_entry(ServiceKind::Telegram, &chat("my chat")).is_err());
        let topic = ServiceEntry { topic: Some("no spaces".into()), ..ServiceEntry::at("https://ntfy.sh") };
        assert!(check_entry(ServiceKind::Ntfy, &topic).is_err());
    }
}
