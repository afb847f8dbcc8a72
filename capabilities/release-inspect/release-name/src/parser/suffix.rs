//! What follows the group at the end of a name: repost and indexer
//! suffixes (`-GROUP-Obfuscated`, `-GROUP-postbot`, `-GROUP-1`), set aside
//! with the flag each implies, and the bracketed site tag
//! (`-GROUP[site]`), which goes to `site`. Neither is ever the group.

use super::Role;
use super::component::Component;

/// Suffixes that indexers and reposters add after the group
/// (`-GROUP-Obfuscated`, `-GROUP-xpost`), with the flag each implies.
const NOISE: &[(&str, Option<&str>)] = &[
    ("obfuscated", Some("Obfuscated")),
    ("scrambled", Some("Obfuscated")),
    ("asrequested", Some("Repost")),
    ("xpost", Some("Repost")),
    ("postbot", Some("Repost")),
    ("repost", Some("Repost")),
    ("rp", Some("Repost")),
    ("repackpost", Some("Repost")),
    ("alternativetorequested", Some("Repost")),
    ("buymore", Some("Repost")),
    ("whiterev", Some("Repost")),
    ("nzbgeek", Some("Repost")),
    ("rakuten", Some("Repost")),
    ("sample", Some("Sample")),
];

/// `-GROUP-Obfuscated`, `-GROUP-xpost`: repost tags after the group.
pub fn repost_tags(c: &mut Component) {
    let t = &c.t;
    let mut i = t.len();
    while i > 1 && t.sep_before(i - 1).contains('-') {
        // `-GROUP-1`: a repost's number, after a word that is hyphenated
        // itself (`x264-GROUP-1`, never `Show-1`).
        let numbered = t.is_digits(i - 1)
            && t.raw(i - 1).len() <= 2
            && i > 2
            && t.sep_before(i - 2).contains('-')
            && t.raw(i - 2).bytes().any(|b| b.is_ascii_alphabetic());
        let flag = match NOISE.iter().find(|(w, _)| *w == t.low(i - 1)) {
            Some((_, flag)) => *flag,
            None if numbered && i == t.len() => Some("Repost"),
            None => break,
        };
        c.roles[i - 1] = Role::Noise;
        c.noise_flags.extend(flag);
        i -= 1;
    }
}

/// `-GROUP[site]`, `-GROUP [site.tld]`: a square bracket ending the name
/// (before any repost suffix), right after a hyphenated group (or one
/// introduced by `by`), holds the
/// site the release was taken from. Its tokens are set aside as a web site
/// so the group ends before it.
pub fn site_tag(c: &mut Component) {
    let t = &c.t;
    let mut end = t.len();
    while end > 0 && c.roles[end - 1] == Role::Noise {
        end -= 1;
    }
    let Some(b) = end.checked_sub(1).and_then(|k| t.list[k].bracket) else { return };
    let Some((first, last)) = t.bracket_tokens(b) else { return };
    let (open, close) = t.brackets[b];
    if last + 1 != end || first < 2 || t.text.as_bytes()[open] != b'[' || close >= t.text.len() {
        return;
    }
    // The group before it: a bare word after a hyphen.
    let g = first - 1;
    let between = &t.text[t.list[g].end..open];
    let introduced = t.sep_before(g).ends_with('-') || t.low(g - 1) == "by";
    if t.list[g].bracket.is_some() || !introduced || !between.trim().is_empty() {
        return;
    }
    if !(first..=last).all(|k| matches!(c.roles[k], Role::Free | Role::Website)) {
        return;
    }
    c.site = Some(t.text[open + 1..close].trim().to_string());
    for r in &mut c.roles[first..=last] {
        *r = Role::Website;
    }
}
