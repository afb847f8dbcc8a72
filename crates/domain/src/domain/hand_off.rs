//! How a plan's release will reach the download client, said in the plan
//! so the person approving it (and the agent reading it) knows before
//! anything is sent. `download.submit` follows the same order: the
//! indexer's `.torrent` link (fetched by the host with the indexer's key
//! when the link is on the indexer's address), else the indexer's magnet as
//! given, else a magnet rebuilt from the infohash alone — which has no
//! trackers and starts only where DHT or peer exchange finds peers, so it
//! is named as the last resort it is.

use serde_json::{Value, json};

use super::SourceRelease;

fn is_magnet(link: &str) -> bool {
    link.trim().get(..7).is_some_and(|head| head.eq_ignore_ascii_case("magnet:"))
}

fn present(link: &Option<String>) -> Option<&str> {
    link.as_deref().map(str::trim).filter(|l| !l.is_empty())
}

/// `{kind, note}`: `torrent-link`, `magnet` or `bare-magnet`.
pub fn describe(release: &SourceRelease) -> Value {
    let link = present(&release.download_url);
    let magnet = present(&release.magnet_url).or(link.filter(|l| is_magnet(l)));
    let (kind, note) = if link.is_some_and(|l| !is_magnet(l)) {
        (
            "torrent-link",
            format!(
                "the .torrent from indexer {}: fetched by Capstan with the indexer's key when the link is on the indexer's address, otherwise by the download client",
                release.indexer
            ),
        )
    } else if magnet.is_some() {
        ("magnet", format!("the magnet link indexer {} gave, trackers kept", release.indexer))
    } else {
        (
            "bare-magnet",
            "a magnet built from the infohash alone: the indexer gave no link, so without trackers it starts only if DHT or peer exchange finds peers".to_string(),
        )
    };
    json!({ "kind": kind, "note": note })
}
