//! Turning keyword hits into [`ReleaseInfo`] fields.
//!
//! Owns the precedence between hits (the first value wins for single
//! fields, lists keep every distinct value), subtitle languages (a
//! language next to a subtitle word), `proper_count`, and the one rule
//! that combines fields: a 2160p Blu-ray is an Ultra HD Blu-ray.

use super::component::{Component, Hit};
use super::keywords::Field;
use crate::parse::ReleaseInfo;

fn push(list: &mut Vec<String>, v: &str) {
    if !list.iter().any(|x| x == v) {
        list.push(v.to_string());
    }
}

fn set(slot: &mut Option<String>, v: &str) {
    if slot.is_none() {
        *slot = Some(v.to_string());
    }
}

/// Fills the tag fields of `info` from the active hits of `c`.
pub fn from_hits(c: &Component, info: &mut ReleaseInfo) {
    let hits: Vec<&Hit> = c.hits.iter().filter(|h| h.active).collect();
    let mut proper = 0;
    let mut dubbed = false;
    for (k, h) in hits.iter().enumerate() {
        for &(field, value) in h.kw.effects {
            match field {
                Field::ScreenSize if value.is_empty() => {
                    let raw = &c.t.lower[c.t.list[h.first].start..c.t.list[h.last].end];
                    set(&mut info.screen_size, &raw.replace('*', "x"));
                }
                Field::ScreenSize => set(&mut info.screen_size, value),
                Field::Source => set(&mut info.source, value),
                Field::VideoCodec => set(&mut info.video_codec, value),
                Field::AudioCodec => set(&mut info.audio_codec, value),
                Field::BitDepth => set(&mut info.bit_depth, value),
                Field::Edition => set(&mut info.edition, value),
                Field::Streaming => set(&mut info.streaming_service, value),
                Field::DynamicRange => push(&mut info.dynamic_range, value),
                Field::Other => push(&mut info.other, value),
                Field::Proper => {
                    push(&mut info.other, value);
                    proper += 1;
                    if h.first > 0 && c.t.low(h.first - 1) == "real" {
                        proper += 1;
                    }
                }
                Field::SubtitleLanguage => push(&mut info.subtitle_languages, value),
                Field::Language => {
                    if subtitle_side(c, &hits, k) {
                        push(&mut info.subtitle_languages, value);
                    } else {
                        push(&mut info.languages, value);
                    }
                }
                Field::SubtitleWord => {
                    let claims = |j: usize| hits.get(j).is_some_and(|o| is_language(o));
                    let next = hits.get(k + 1).is_some_and(|o| o.first == h.last + 1) && claims(k + 1);
                    let prev = k > 0 && hits[k - 1].last + 1 == h.first && claims(k - 1);
                    if !next && !prev {
                        push(&mut info.subtitle_languages, "und");
                    }
                }
                Field::Container => set(&mut info.container, value),
                Field::Dubbed => dubbed = true,
                Field::Marker => {}
            }
        }
    }
    if dubbed && info.languages.is_empty() {
        info.languages.push("und".to_string());
    }
    if proper > 0 {
        info.proper_count = Some(proper);
    }
    if info.source.as_deref() == Some("Blu-ray") && info.screen_size.as_deref() == Some("2160p") {
        info.source = Some("Ultra HD Blu-ray".to_string());
    }
}

fn is_language(h: &Hit) -> bool {
    h.kw.effects.iter().any(|(f, _)| *f == Field::Language)
}

fn is_sub_word(h: &Hit) -> bool {
    h.kw.effects.iter().any(|(f, _)| *f == Field::SubtitleWord)
}

/// Whether the language hit `k` belongs to a subtitle word: after one
/// (`sub.FR`, `ST{Fr-Eng}`, `Sub Ita Eng`) or glued before one (`NL-subs`,
/// `German.Sub`, `EN-SUB`).
fn subtitle_side(c: &Component, hits: &[&Hit], k: usize) -> bool {
    let mut j = k;
    while j > 0 && hits[j - 1].last + 1 == hits[j].first {
        j -= 1;
        if is_sub_word(hits[j]) {
            return true;
        }
        if !is_language(hits[j]) {
            break;
        }
    }
    let mut j = k;
    while j + 1 < hits.len() && hits[j + 1].first == hits[j].last + 1 && c.t.sep_before(hits[j + 1].first).len() == 1 {
        j += 1;
        if is_sub_word(hits[j]) {
            return true;
        }
        if !is_language(hits[j]) {
            break;
        }
    }
    false
}
