//! Which files of a download are the media to organize: video files under
//! the download's content path (a file or a folder under `downloads`),
//! without samples and extras.
//!
//! A sample is a video named "sample" or one smaller than a tenth of the
//! largest video of the download: a fixed size floor would either keep the
//! samples of a 4K remux or drop the episodes of an SD season pack, and it
//! would need a setting both organize capabilities had to agree on.

use capstan_sdk::Failure;
use capstan_sdk::host::{FileInfo, HostError, files};

use crate::DOWNLOADS;

/// Extensions of the video files a library holds.
pub const VIDEO_EXTENSIONS: &[&str] =
    &["mkv", "mp4", "m4v", "avi", "mov", "wmv", "ts", "m2ts", "webm", "mpg", "mpeg", "ogm", "flv"];

/// Folders whose files are never the feature itself.
const EXTRA_FOLDERS: &[&str] = &[
    "sample",
    "samples",
    "extras",
    "extra",
    "featurettes",
    "behind the scenes",
    "deleted scenes",
    "interviews",
    "scenes",
    "shorts",
    "trailers",
    "other",
    "bonus",
];

/// Last words of a file name (`Dune-trailer.mkv`) that mark an extra.
const EXTRA_SUFFIXES: &[&str] =
    &["trailer", "featurette", "behindthescenes", "deleted", "interview", "scene", "short", "extra", "other"];

/// A video is a sample when it is smaller than the largest one divided by this.
const SAMPLE_FRACTION: u64 = 10;

/// How deep a download folder is searched, and how many entries are read,
/// so a pathological folder cannot stall the call.
const MAX_DEPTH: usize = 4;
const MAX_ENTRIES: u32 = 2000;

/// One media file of a download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaFile {
    /// Path under the `downloads` root.
    pub path: String,
    pub size: u64,
}

impl MediaFile {
    /// The file name, without folders.
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }

    /// The extension, lower case, without the dot.
    pub fn extension(&self) -> String {
        extension(self.name()).unwrap_or_default()
    }
}

fn extension(name: &str) -> Option<String> {
    let (stem, ext) = name.rsplit_once('.')?;
    (!stem.is_empty()).then(|| ext.to_ascii_lowercase())
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Whether `name` (a file name) is a video by its extension.
pub fn is_video(name: &str) -> bool {
    extension(name).is_some_and(|e| VIDEO_EXTENSIONS.contains(&e.as_str()))
}

/// Whether a file name says it is a sample or an extra.
fn named_extra(name: &str) -> bool {
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    let words = words(stem);
    if words.iter().any(|w| w == "sample") {
        return true;
    }
    // Only as a `-suffix`, so a title word such as "Trailer Park" stays.
    stem.rsplit_once('-').is_some_and(|(_, last)| {
        let last = last.trim().to_lowercase().replace(' ', "");
        EXTRA_SUFFIXES.contains(&last.as_str())
    })
}

fn extra_folder(name: &str) -> bool {
    EXTRA_FOLDERS.contains(&name.trim().to_lowercase().as_str())
}

fn host(path: &str, e: HostError) -> Failure {
    match e {
        HostError::NotFound(_) => {
            Failure::NotFound(format!("the download's content {path:?} does not exist under the {DOWNLOADS} root"))
        }
        other => other.into(),
    }
}

fn name_of(info: &FileInfo) -> &str {
    info.path.rsplit('/').next().unwrap_or(&info.path)
}

/// The media files of the download whose content is at `content_path`
/// (relative to `downloads`), sorted by path. No media is `not-found`.
pub fn media_files(content_path: &str) -> Result<Vec<MediaFile>, Failure> {
    if content_path.trim().is_empty() {
        return Err(Failure::Conflict("the download has no content path".into()));
    }
    // A download is one file or folder; the whole root is every download.
    if content_path.split('/').all(|s| matches!(s.trim(), "" | ".")) {
        return Err(Failure::Conflict(format!(
            "the download's content path {content_path:?} names the whole {DOWNLOADS} root, not one download"
        )));
    }
    let top = files::stat(DOWNLOADS, content_path).map_err(|e| host(content_path, e))?;
    let mut videos = Vec::new();
    if top.is_dir {
        walk(content_path, 0, &mut videos)?;
    } else if is_video(name_of(&top)) && !named_extra(name_of(&top)) {
        videos.push(MediaFile { path: top.path.clone(), size: top.size });
    }
    let largest = videos.iter().map(|v| v.size).max().unwrap_or(0);
    videos.retain(|v| v.size > 0 && v.size.saturating_mul(SAMPLE_FRACTION) >= largest);
    videos.sort_by(|a, b| a.path.cmp(&b.path));
    if videos.is_empty() {
        return Err(Failure::NotFound(format!(
            "no video files ({}) under {content_path:?} besides samples and extras",
            VIDEO_EXTENSIONS.join(", ")
        )));
    }
    Ok(videos)
}

fn walk(dir: &str, depth: usize, out: &mut Vec<MediaFile>) -> Result<(), Failure> {
    let entries = files::list(DOWNLOADS, dir, MAX_ENTRIES).map_err(|e| host(dir, e))?;
    for entry in entries {
        let name = name_of(&entry);
        if entry.is_dir {
            if depth < MAX_DEPTH && !extra_folder(name) {
                walk(&entry.path, depth + 1, out)?;
            }
        } else if is_video(name) && !named_extra(name) {
            out.push(MediaFile { path: entry.path.clone(), size: entry.size });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_and_extras_are_recognised_by_name() {
        assert!(named_extra("dune-sample.mkv"));
        assert!(named_extra("Sample.mkv"));
        assert!(named_extra("Dune - Trailer.mp4"));
        assert!(named_extra("Dune-behindthescenes.mkv"));
        assert!(!named_extra("Trailer.Park.Boys.S01E01.mkv"));
        assert!(!named_extra("Dune.Part.Two.2024.2160p.mkv"));
        assert!(extra_folder("Featurettes"));
        assert!(!extra_folder("Season 01"));
    }

    #[test]
    fn only_video_extensions_count() {
        assert!(is_video("a.MKV"));
        assert!(!is_video("a.nfo"));
        assert!(!is_video("a.srt"));
        assert!(!is_video(".mkv"));
        assert!(!is_video("mkv"));
    }
}
