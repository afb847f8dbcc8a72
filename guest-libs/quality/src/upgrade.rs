//! When a file the library holds is good enough, and what would replace
//! it. A profile's `cutoff` is a resolution: a file below it is upgraded
//! by an acceptable release of a better resolution; a file at or above it
//! is kept. Apart from that, a PROPER or REPACK of the very release a file
//! came from (same group, resolution and source, re-done more times)
//! replaces it, cutoff or not: it fixes the release, it is not a better
//! one. Size and codec never make an upgrade, so files are not swapped
//! back and forth between releases that are equally good.

use serde::Serialize;

use super::{Offer, QualityProfile, canon};

/// Why a release would replace a held file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Upgrade {
    /// A better resolution, the held file being below the cutoff.
    Better,
    /// A PROPER or REPACK of the held file's release.
    Proper,
}

impl QualityProfile {
    /// Whether `held` is good enough: the profile names no cutoff, or the
    /// file's resolution is the cutoff or ranks before it. A file whose
    /// resolution the profile does not list is below any cutoff.
    pub fn meets_cutoff(&self, held: &Offer) -> bool {
        let Some(cutoff) = self.cutoff.as_deref().and_then(|c| self.resolution_rank(c)) else { return true };
        held.resolution.as_deref().and_then(|r| self.resolution_rank(r)).is_some_and(|rank| rank <= cutoff)
    }

    /// Whether `new` would replace `held`, and why; `None` when it would
    /// not (not acceptable, not better, or better only once the cutoff is
    /// met).
    pub fn upgrade(&self, held: &Offer, new: &Offer) -> Option<Upgrade> {
        if !self.judge(new).acceptable {
            return None;
        }
        if is_proper_of(held, new) {
            return Some(Upgrade::Proper);
        }
        let rank = |o: &Offer| o.resolution.as_deref().and_then(|r| self.resolution_rank(r)).unwrap_or(usize::MAX);
        (!self.meets_cutoff(held) && rank(new) < rank(held)).then_some(Upgrade::Better)
    }
}

/// Whether `new` is the release `held` came from, re-done more times: the
/// same group, resolution and source, with a higher PROPER/REPACK count.
pub fn is_proper_of(held: &Offer, new: &Offer) -> bool {
    let same = |a: &Option<String>, b: &Option<String>| match (a, b) {
        (Some(a), Some(b)) => canon(a) == canon(b),
        _ => false,
    };
    new.proper > held.proper
        && same(&held.group, &new.group)
        && same(&held.resolution, &new.resolution)
        && held.source.as_deref().map(canon) == new.source.as_deref().map(canon)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(cutoff: Option<&str>) -> QualityProfile {
        QualityProfile {
            preferred_resolutions: vec!["2160p".into(), "1080p".into(), "720p".into()],
            allowed_sources: None,
            min_size_mb: None,
            max_size_mb: None,
            preferred_codecs: Some(vec!["x265".into()]),
            reject_terms: Some(vec!["CAM".into()]),
            cutoff: cutoff.map(str::to_string),
        }
    }

    fn offer(name: &str) -> Offer {
        super::super::offer(&serde_json::json!({ "title": name, "size": 2_000_000_000 }))
    }

    #[test]
    fn a_file_below_the_cutoff_is_upgraded_by_a_better_resolution_only() {
        let p = profile(Some("1080p"));
        let held = offer("Film.2024.720p.WEB-DL.x264-GRP");
        assert!(!p.meets_cutoff(&held));
        assert_eq!(p.upgrade(&held, &offer("Film.2024.1080p.WEB-DL.x264-OTHER")), Some(Upgrade::Better));
        assert_eq!(p.upgrade(&held, &offer("Film.2024.2160p.WEB-DL.x265-OTHER")), Some(Upgrade::Better));
        // Another 720p, even in the preferred codec, is not better.
        assert_eq!(p.upgrade(&held, &offer("Film.2024.720p.WEB-DL.x265-OTHER")), None);
        // Nor is a release the profile rejects.
        assert_eq!(p.upgrade(&held, &offer("Film.2024.1080p.CAM-OTHER")), None);
    }

    #[test]
    fn a_file_at_the_cutoff_is_kept_but_a_proper_of_it_replaces_it() {
        let p = profile(Some("1080p"));
        let held = offer("Film.2024.1080p.WEB-DL.x264-GRP");
        assert!(p.meets_cutoff(&held));
        assert_eq!(p.upgrade(&held, &offer("Film.2024.2160p.WEB-DL.x265-OTHER")), None);
        assert_eq!(p.upgrade(&held, &offer("Film.2024.PROPER.1080p.WEB-DL.x264-GRP")), Some(Upgrade::Proper));
        assert_eq!(p.upgrade(&held, &offer("Film.2024.REPACK.1080p.WEB-DL.x264-grp")), Some(Upgrade::Proper));
        // Another group's PROPER is another release, and a PROPER at
        // another resolution is not a fix of this file.
        assert_eq!(p.upgrade(&held, &offer("Film.2024.PROPER.1080p.WEB-DL.x264-OTHER")), None);
        assert_eq!(p.upgrade(&held, &offer("Film.2024.PROPER.720p.WEB-DL.x264-GRP")), None);
        // A release re-done twice replaces one re-done once; the same
        // one again does not.
        let first = offer("Film.2024.REPACK.1080p.WEB-DL.x264-GRP");
        assert_eq!(p.upgrade(&first, &offer("Film.2024.REPACK.1080p.WEB-DL.x264-GRP")), None);
        assert_eq!(p.upgrade(&first, &offer("Film.2024.PROPER.REPACK.1080p.WEB-DL.x264-GRP")), Some(Upgrade::Proper));
    }

    #[test]
    fn without_a_cutoff_nothing_is_upgraded_but_propers() {
        let p = profile(None);
        let held = offer("Film.2024.720p.WEB-DL.x264-GRP");
        assert!(p.meets_cutoff(&held));
        assert_eq!(p.upgrade(&held, &offer("Film.2024.2160p.WEB-DL.x265-OTHER")), None);
        assert_eq!(p.upgrade(&held, &offer("Film.2024.PROPER.720p.WEB-DL.x264-GRP")), Some(Upgrade::Proper));
    }

    #[test]
    fn a_file_of_an_unlisted_resolution_is_below_any_cutoff() {
        let p = profile(Some("720p"));
        let held = offer("Film.2024.480p.DVDRip.x264-GRP");
        assert!(!p.meets_cutoff(&held));
        assert_eq!(p.upgrade(&held, &offer("Film.2024.720p.WEB-DL.x264-OTHER")), Some(Upgrade::Better));
    }
}
