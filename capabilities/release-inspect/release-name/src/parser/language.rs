//! Language words: audio languages (`FRENCH`, `iTA`, `MULTi`), subtitle
//! tags that carry their language (`VOSTFR`, `NLSubs`, `SWESUB`), and
//! which neighbouring languages a subtitle word (`Sub`, `Subbed`, `ST`)
//! claims.
//!
//! Owns the language part of the keyword vocabulary and the post-pass that
//! moves languages next to subtitle words into `subtitle_languages`.
//! Values are English names (`French`), `mul` for multi-language, and a
//! tag with region (`pt-BR`, `de-CH`) where the name says which variant.

use super::keywords::{Field, Keyword, Strength};

use Field::{Language as L, SubtitleLanguage as S};
use Strength::{Medium, Tail, Weak};

const fn kw(strength: Strength, effects: &'static [(Field, &'static str)]) -> Option<Keyword> {
    Some(Keyword { strength, effects })
}

/// Language keys; called from the keyword table for keys it does not know.
#[rustfmt::skip]
pub fn classify(key: &str) -> Option<Keyword> {
    match key {
        "multi" | "multilang" | "multilanguage" | "multiaudio" => kw(Weak, &[(L, "mul")]),
        "french" | "francais" | "français" => kw(Weak, &[(L, "French")]),
        "truefrench" | "vff" | "vfq" | "vfi" | "vf2" | "vfstfr" => kw(Medium, &[(L, "French")]),
        "vf" | "fr" | "fre" | "fra" => kw(Tail, &[(L, "French")]),
        "english" => kw(Weak, &[(L, "English")]),
        "eng" | "en" => kw(Tail, &[(L, "English")]),
        "german" | "deutsch" => kw(Weak, &[(L, "German")]),
        "ger" | "deu" | "de" => kw(Tail, &[(L, "German")]),
        "swissgerman" => kw(Medium, &[(L, "de-CH")]),
        "italian" | "italiano" => kw(Weak, &[(L, "Italian")]),
        "ita" => kw(Tail, &[(L, "Italian")]),
        "spanish" | "espanol" | "español" | "castellano" | "castilian" => kw(Weak, &[(L, "Spanish")]),
        "esp" | "spa" | "es" => kw(Tail, &[(L, "Spanish")]),
        "latino" => kw(Weak, &[(L, "es-419")]),
        "russian" => kw(Weak, &[(L, "Russian")]),
        "rus" | "ru" => kw(Tail, &[(L, "Russian")]),
        "japanese" => kw(Weak, &[(L, "Japanese")]),
        "jpn" | "jap" | "jp" => kw(Tail, &[(L, "Japanese")]),
        "korean" => kw(Weak, &[(L, "Korean")]),
        "kor" => kw(Tail, &[(L, "Korean")]),
        "chinese" | "mandarin" | "cantonese" => kw(Weak, &[(L, "Chinese")]),
        "chs" | "cht" => kw(Tail, &[(L, "Chinese")]),
        "portuguese" | "portugues" => kw(Weak, &[(L, "Portuguese")]),
        "por" | "pt" => kw(Tail, &[(L, "Portuguese")]),
        "ptbr" | "brazilian" => kw(Weak, &[(L, "pt-BR")]),
        "dutch" => kw(Weak, &[(L, "Dutch")]),
        "nl" | "dut" => kw(Tail, &[(L, "Dutch")]),
        "flemish" => kw(Weak, &[(L, "nl-BE")]),
        "polish" => kw(Weak, &[(L, "Polish")]),
        "pl" | "pol" => kw(Tail, &[(L, "Polish")]),
        "hindi" => kw(Weak, &[(L, "Hindi")]),
        "telugu" => kw(Weak, &[(L, "Telugu")]),
        "tamil" => kw(Weak, &[(L, "Tamil")]),
        "catalan" | "catala" => kw(Weak, &[(L, "Catalan")]),
        "hungarian" | "magyar" => kw(Weak, &[(L, "Hungarian")]),
        "hun" => kw(Tail, &[(L, "Hungarian")]),
        "czech" => kw(Weak, &[(L, "Czech")]),
        "cz" | "cze" => kw(Tail, &[(L, "Czech")]),
        "ukrainian" => kw(Weak, &[(L, "Ukrainian")]),
        "ukr" => kw(Tail, &[(L, "Ukrainian")]),
        "swedish" => kw(Weak, &[(L, "Swedish")]),
        "swe" => kw(Tail, &[(L, "Swedish")]),
        "danish" => kw(Weak, &[(L, "Danish")]),
        "norwegian" => kw(Weak, &[(L, "Norwegian")]),
        "finnish" => kw(Weak, &[(L, "Finnish")]),
        "turkish" => kw(Weak, &[(L, "Turkish")]),
        "greek" => kw(Weak, &[(L, "Greek")]),
        "hebrew" => kw(Weak, &[(L, "Hebrew")]),
        "heb" => kw(Tail, &[(L, "Hebrew")]),
        "arabic" => kw(Weak, &[(L, "Arabic")]),
        "thai" => kw(Weak, &[(L, "Thai")]),
        "vietnamese" => kw(Weak, &[(L, "Vietnamese")]),
        "romanian" => kw(Weak, &[(L, "Romanian")]),
        "ro" => kw(Tail, &[(L, "Romanian")]),
        "bulgarian" => kw(Weak, &[(L, "Bulgarian")]),
        "croatian" => kw(Weak, &[(L, "Croatian")]),
        "serbian" => kw(Weak, &[(L, "Serbian")]),
        "indonesian" => kw(Weak, &[(L, "Indonesian")]),
        // Subtitle tags that name their language.
        "vostfr" | "vost" | "stfr" | "subfrench" | "vosta" => kw(Medium, &[(S, "French")]),
        "nlsub" | "nlsubs" | "nlsubbed" => kw(Medium, &[(S, "Dutch")]),
        "hebsub" | "hebsubs" => kw(Medium, &[(S, "Hebrew")]),
        "swesub" | "swesubs" => kw(Medium, &[(S, "Swedish")]),
        "engsub" | "engsubs" | "esub" | "esubs" => kw(Medium, &[(S, "English")]),
        "itasub" | "subita" => kw(Medium, &[(S, "Italian")]),
        _ => None,
    }
}
