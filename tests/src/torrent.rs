//! Builds real `.torrent` files (BitTorrent v1, bencoded, SHA-1 piece
//! hashes) for payloads it writes to a folder, so a real qBittorrent can
//! verify the data without any peer or tracker.

use std::path::{Path, PathBuf};

use serde::Serialize;
use sha1::{Digest, Sha1};

/// The smallest piece size libtorrent accepts; small payloads still span
/// several pieces, so a partial file is noticed.
const PIECE_LENGTH: usize = 16 * 1024;

/// A torrent and the payload it describes.
#[derive(Debug, Clone)]
pub struct BuiltTorrent {
    /// The `.torrent` file.
    pub bytes: Vec<u8>,
    /// v1 infohash, lowercase hex.
    pub info_hash: String,
    pub magnet: String,
    /// The torrent's name: the file name, or the top folder's name.
    pub name: String,
    /// The folder to give qBittorrent as save path.
    pub save_path: PathBuf,
    /// Every payload file written, in torrent order.
    pub files: Vec<PathBuf>,
}

#[derive(Serialize)]
struct MetaInfo<'a> {
    info: &'a Info,
    #[serde(rename = "created by")]
    created_by: &'static str,
}

/// The `info` dictionary; its bencoding is what the infohash is taken of.
/// serde_bencode writes dictionary keys sorted, as the format requires.
#[derive(Serialize)]
struct Info {
    name: String,
    #[serde(rename = "piece length")]
    piece_length: usize,
    #[serde(with = "serde_bytes")]
    pieces: Vec<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    length: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<Vec<FileEntry>>,
}

#[derive(Serialize)]
struct FileEntry {
    length: usize,
    path: Vec<String>,
}

/// Writes `contents` to `save_path/name` and builds a single-file torrent.
pub fn single_file(save_path: &Path, name: &str, contents: &[u8]) -> BuiltTorrent {
    std::fs::create_dir_all(save_path).unwrap();
    let file = save_path.join(name);
    std::fs::write(&file, contents).unwrap();
    let info = Info {
        name: name.to_string(),
        piece_length: PIECE_LENGTH,
        pieces: piece_hashes(contents),
        length: Some(contents.len()),
        files: None,
    };
    finish(info, save_path, vec![file])
}

/// Writes each `(relative path, contents)` under `save_path/name/` and builds
/// a multi-file torrent whose pieces run across file boundaries.
pub fn multi_file(save_path: &Path, name: &str, files: &[(&str, Vec<u8>)]) -> BuiltTorrent {
    let root = save_path.join(name);
    let mut written = Vec::new();
    let mut entries = Vec::new();
    let mut concatenated = Vec::new();
    for (relative, contents) in files {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, contents).unwrap();
        written.push(path);
        entries.push(FileEntry { length: contents.len(), path: relative.split('/').map(String::from).collect() });
        concatenated.extend_from_slice(contents);
    }
    let info = Info {
        name: name.to_string(),
        piece_length: PIECE_LENGTH,
        pieces: piece_hashes(&concatenated),
        length: None,
        files: Some(entries),
    };
    finish(info, save_path, written)
}

/// `len` bytes that differ per `seed`, so two payloads never share pieces.
pub fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            // xorshift64: cheap, deterministic, not compressible into sameness.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn piece_hashes(data: &[u8]) -> Vec<u8> {
    data.chunks(PIECE_LENGTH).flat_map(|piece| Sha1::digest(piece).to_vec()).collect()
}

fn finish(info: Info, save_path: &Path, files: Vec<PathBuf>) -> BuiltTorrent {
    let info_hash = hex::encode(Sha1::digest(serde_bencode::to_bytes(&info).unwrap()));
    let bytes = serde_bencode::to_bytes(&MetaInfo { info: &info, created_by: "capstan-tests" }).unwrap();
    let magnet = format!("magnet:?xt=urn:btih:{info_hash}&dn={}", percent_encode(&info.name));
    BuiltTorrent { bytes, info_hash, magnet, name: info.name, save_path: save_path.to_path_buf(), files }
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_infohash_is_the_sha1_of_the_info_dictionary_inside_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let built = single_file(dir.path(), "Movie (2024).mkv", &payload(40_000, 1));
        // The bencoded file is `d` + `10:created by...` + `4:info` + <info> + `e`:
        // keys sorted, so the info dictionary is the last value.
        let start = built.bytes.windows(7).position(|w| w == b"4:infod").unwrap() + 6;
        let info = &built.bytes[start..built.bytes.len() - 1];
        assert_eq!(built.info_hash, hex::encode(Sha1::digest(info)));
        assert_eq!(built.info_hash.len(), 40);
        assert!(built.magnet.ends_with("&dn=Movie%20%282024%29.mkv"), "{}", built.magnet);
        assert_eq!(std::fs::read(&built.files[0]).unwrap().len(), 40_000);
    }

    #[test]
    fn multi_file_torrents_list_every_file_under_one_folder() {
        let dir = tempfile::tempdir().unwrap();
        let built = multi_file(
            dir.path(),
            "Show.S01",
            &[("Show.S01E01.mkv", payload(20_000, 2)), ("Subs/Show.S01E01.srt", payload(300, 3))],
        );
        assert_eq!(
            built.files,
            [dir.path().join("Show.S01/Show.S01E01.mkv"), dir.path().join("Show.S01/Subs/Show.S01E01.srt")]
        );
        let text = String::from_utf8_lossy(&built.bytes);
        assert!(text.contains("4:pathl4:Subs15:Show.S01E01.srte"), "{text}");
        // 20 300 bytes span two 16 KiB pieces: two 20-byte hashes.
        assert!(text.contains("6:pieces40:"));
        assert_ne!(payload(100, 2), payload(100, 3));
    }
}
