//! BitTorrent v1 info-hashes: the key releases are deduplicated on. Feeds
//! give them as 40 hex digits (any case) or inside a magnet link, where
//! the btih may also be 32 base32 characters; all become lowercase hex.

/// Normalises a 40-digit hex or 32-character base32 info-hash.
pub fn normalise(raw: &str) -> Option<String> {
    let raw = raw.trim();
    match raw.len() {
        40 if raw.chars().all(|c| c.is_ascii_hexdigit()) => Some(raw.to_ascii_lowercase()),
        32 => base32_to_hex(raw),
        _ => None,
    }
}

/// The info-hash in a magnet link's `xt=urn:btih:` parameter.
pub fn from_magnet(magnet: &str) -> Option<String> {
    let query = magnet.trim().strip_prefix("magnet:?")?;
    query.split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        // Some clients number repeated topics: xt.1, xt.2.
        if name != "xt" && !name.starts_with("xt.") {
            return None;
        }
        let hash = value.get(..9).filter(|p| p.eq_ignore_ascii_case("urn:btih:")).map(|_| &value[9..])?;
        normalise(hash)
    })
}

/// RFC 4648 base32 (no padding) of a 20-byte hash, as lowercase hex.
fn base32_to_hex(text: &str) -> Option<String> {
    let mut bits: u64 = 0;
    let mut count = 0u32;
    let mut bytes = Vec::with_capacity(20);
    for c in text.chars() {
        let value = match c.to_ascii_uppercase() {
            upper @ 'A'..='Z' => upper as u64 - 'A' as u64,
            digit @ '2'..='7' => digit as u64 - '2' as u64 + 26,
            _ => return None,
        };
        bits = (bits << 5) | value;
        count += 5;
        if count >= 8 {
            count -= 8;
            bytes.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    (bytes.len() == 20).then(|| bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::{from_magnet, normalise};

    const HEX: &str = "dd8255ecdc7ca55fb0bbf81323d87062db1f6d1c";
    /// The same 20 bytes as `HEX`, base32-encoded.
    const BASE32: &str = "3WBFL3G4PSSV7MF37AJSHWDQMLNR63I4";

    #[test]
    fn hex_is_lowercased_and_base32_becomes_the_same_hex() {
        assert_eq!(normalise(&HEX.to_uppercase()).as_deref(), Some(HEX));
        assert_eq!(normalise(BASE32).as_deref(), Some(HEX));
        assert_eq!(normalise(&BASE32.to_lowercase()).as_deref(), Some(HEX));
    }

    #[test]
    fn magnets_yield_their_btih() {
        let magnet = format!("magnet:?dn=Big+Buck+Bunny&xt=urn:btih:{BASE32}&tr=udp%3A%2F%2Ftracker.example%3A1337");
        assert_eq!(from_magnet(&magnet).as_deref(), Some(HEX));
        assert_eq!(from_magnet(&format!("magnet:?xt=URN:BTIH:{HEX}")).as_deref(), Some(HEX));
    }

    #[test]
    fn anything_else_has_no_hash() {
        assert_eq!(normalise("abc"), None);
        assert_eq!(normalise(&"g".repeat(40)), None);
        assert_eq!(normalise("1WBFL3G4PSSV7MF37AJSHWDQMLNR63I4"), None, "1 is not base32");
        assert_eq!(from_magnet("https://example.org/file.torrent"), None);
        assert_eq!(from_magnet("magnet:?xt=urn:btmh:1220abcdef"), None);
    }
}
