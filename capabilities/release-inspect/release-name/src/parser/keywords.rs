//! The keyword vocabulary: which words in a release name are technical
//! tags, what they mean, and how sure we can be that they are tags.
//!
//! Owns: [`classify`], a `match` over lower-case keys (compiled to static
//! code, nothing built at run time) plus a few hand-written shape checks
//! for tags that carry numbers (`1080p`, `1920x1080`, `10bit`, `DD5.1`,
//! `4.7GB`). A key is one token or several adjacent tokens joined without
//! their separators, so `WEB-DL`, `WEB.DL` and `WEBDL` are all `webdl`.
//! Output values use guessit's vocabulary (`Blu-ray`, `H.264`, `Dolby
//! Digital Plus`), which is also what the conformance data expects.

/// Which [`crate::parse::ReleaseInfo`] field a keyword fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[rustfmt::skip]
pub enum Field {
    ScreenSize, Source, VideoCodec, AudioCodec, DynamicRange, BitDepth, Edition,
    Language, SubtitleLanguage, Streaming, Other,
    /// A container named inside the name (`...MP4-GROUP`, `[MKV]`); the
    /// file extension wins over it.
    Container,
    /// `Dubbed`, `Dublado`: audio in a language the name does not give
    /// (`und` when no language is named).
    Dubbed,
    /// `PROPER`, `REPACK`: an `other` flag that also counts towards
    /// `proper_count`.
    Proper,
    /// `SUBS`, `SUBBED`, `ST`: makes neighbouring languages subtitle
    /// languages; `und` on its own.
    SubtitleWord,
    /// Recognised so it is not read as a title word, but reported nowhere
    /// (`5.1`, `HQ`, file sizes, `x264` tags glued to other text).
    Marker,
}

/// How certain it is that the word is a tag and not part of a title.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Strength {
    /// Ordinary words or very short tags (`HD`, `TS`, `DC`, `LiNE`, `FR`):
    /// only a tag once something certain has ended the title, or when it
    /// stands alone in brackets (`[BD]`).
    Tail,
    /// Languages: cut from the title only when followed by certain tags,
    /// not by a year alone (`Immersion.French.2011` keeps `French`).
    Weak,
    /// Release flags and editions (`PROPER`, `EXTENDED`, `LIMITED`): cut
    /// from the title when followed by any other tag or the year.
    Medium,
    /// Unambiguous (`1080p`, `x264`, `BluRay`): ends the title.
    Strong,
}

use Field::*;
use Strength::*;

/// What a keyword means: its strength and the values it sets. A value of
/// `""` asks the caller to use the text as written (unusual resolutions).
#[derive(Debug, Clone, Copy)]
pub struct Keyword {
    pub strength: Strength,
    pub effects: &'static [(Field, &'static str)],
}

const fn kw(strength: Strength, effects: &'static [(Field, &'static str)]) -> Option<Keyword> {
    Some(Keyword { strength, effects })
}

/// Classifies a key: lower-case letters and digits of one or more adjacent
/// tokens, with `+` kept (`dd+`, `hdr10+`) and `*` read as `x`.
pub fn classify(key: &str) -> Option<Keyword> {
    table(key).or_else(|| shaped(key))
}

/// Fixed words.
#[rustfmt::skip]
fn table(key: &str) -> Option<Keyword> {
    match key {
        // Resolution words.
        "4k" | "uhd4k" => kw(Strong, &[(ScreenSize, "2160p")]),
        "8k" => kw(Strong, &[(ScreenSize, "4320p")]),
        "uhd" | "ultrahd" => kw(Strong, &[(Other, "Ultra HD")]),
        "fhd" | "fullhd" => kw(Tail, &[(Other, "Full HD")]),
        "hd" => kw(Tail, &[(Other, "HD")]),
        "mhd" | "hdlight" => kw(Strong, &[(Other, "Micro HD")]),

        // Sources. Rips re-encode the disc or stream; a BRRip is a rip of
        // a rip, which guessit calls re-encoded.
        "bluray" | "bdr" | "bd25" | "bd50" | "bd5" | "bd9" | "bdiso" | "blurayiso" =>
            kw(Strong, &[(Source, "Blu-ray")]),
        "bd" => kw(Tail, &[(Source, "Blu-ray")]),
        "bdrip" | "blurayrip" => kw(Strong, &[(Source, "Blu-ray"), (Other, "Rip")]),
        "brrip" | "brip" => kw(Strong, &[(Source, "Blu-ray"), (Other, "Reencoded"), (Other, "Rip")]),
        "bdremux" | "blurayremux" => kw(Strong, &[(Source, "Blu-ray"), (Other, "Remux")]),
        "bdmux" | "brmux" | "bluraymux" => kw(Strong, &[(Source, "Blu-ray"), (Other, "Mux")]),
        "bdripmux" => kw(Strong, &[(Source, "Blu-ray"), (Other, "Rip"), (Other, "Mux")]),
        "brripmux" => kw(Strong, &[(Source, "Blu-ray"), (Other, "Reencoded"), (Other, "Rip"), (Other, "Mux")]),
        "uhdbluray" | "uhdbd" | "ultrahdbluray" | "uhdbdrip" | "4kbluray" | "uhdbdremux" =>
            kw(Strong, &[(Source, "Ultra HD Blu-ray")]),
        "hddvd" => kw(Strong, &[(Source, "HD-DVD")]),
        "hddvdrip" => kw(Strong, &[(Source, "HD-DVD"), (Other, "Rip")]),
        "dvd" | "dvdr" | "dvd5" | "dvd9" | "videots" | "dvdiso" | "ntscdvd" | "paldvd" =>
            kw(Strong, &[(Source, "DVD")]),
        "dvdrip" | "dvdriprip" => kw(Strong, &[(Source, "DVD"), (Other, "Rip")]),
        "dvdmux" => kw(Strong, &[(Source, "DVD"), (Other, "Mux")]),
        "dvdscr" | "dvdscreener" => kw(Strong, &[(Source, "DVD"), (Other, "Screener")]),
        "dvdivx" => kw(Strong, &[(Source, "DVD"), (VideoCodec, "DivX")]),
        "web" => kw(Weak, &[(Source, "Web")]),
        "webdl" | "webhd" | "webuhd" | "webcap" | "dlweb" | "webdlhd" => kw(Strong, &[(Source, "Web")]),
        "webrip" | "webdlrip" | "webhdrip" => kw(Strong, &[(Source, "Web"), (Other, "Rip")]),
        "webmux" | "dlmux" | "webdlmux" => kw(Strong, &[(Source, "Web"), (Other, "Mux")]),
        "hdtv" | "hdtvhd" => kw(Strong, &[(Source, "HDTV")]),
        "hdtvrip" => kw(Strong, &[(Source, "HDTV"), (Other, "Rip")]),
        "hdtvmux" => kw(Strong, &[(Source, "HDTV"), (Other, "Mux")]),
        "ahdtv" => kw(Strong, &[(Source, "Analog HDTV")]),
        "uhdtv" => kw(Strong, &[(Source, "Ultra HDTV")]),
        "uhdrip" | "uhdtvrip" => kw(Strong, &[(Source, "Ultra HDTV"), (Other, "Rip")]),
        "pdtv" | "dvb" | "dtv" | "dtt" => kw(Strong, &[(Source, "Digital TV")]),
        "dvbrip" | "pdtvrip" | "dtvrip" => kw(Strong, &[(Source, "Digital TV"), (Other, "Rip")]),
        "sdtv" => kw(Strong, &[(Source, "TV")]),
        "tvrip" | "sdtvrip" => kw(Strong, &[(Source, "TV"), (Other, "Rip")]),
        "dsr" | "dth" => kw(Strong, &[(Source, "Satellite")]),
        "sat" => kw(Tail, &[(Source, "Satellite")]),
        "dsrip" | "dsrrip" | "satrip" | "dthrip" => kw(Strong, &[(Source, "Satellite"), (Other, "Rip")]),
        "cam" => kw(Tail, &[(Source, "Camera")]),
        "camrip" => kw(Strong, &[(Source, "Camera"), (Other, "Rip")]),
        "hdcam" => kw(Strong, &[(Source, "HD Camera")]),
        "ts" => kw(Tail, &[(Source, "Telesync")]),
        "telesync" | "pdvd" => kw(Strong, &[(Source, "Telesync")]),
        "hdts" | "hdtelesync" => kw(Strong, &[(Source, "HD Telesync")]),
        "tc" => kw(Tail, &[(Source, "Telecine")]),
        "telecine" => kw(Strong, &[(Source, "Telecine")]),
        "hdtc" | "hdtelecine" => kw(Strong, &[(Source, "HD Telecine")]),
        "wp" => kw(Tail, &[(Source, "Workprint")]),
        "workprint" => kw(Strong, &[(Source, "Workprint")]),
        "ppv" | "ppvrip" => kw(Strong, &[(Source, "Pay-per-view")]),
        "vod" | "vodrip" => kw(Strong, &[(Source, "Video on Demand")]),
        "vhs" => kw(Strong, &[(Source, "VHS")]),
        "vhsrip" => kw(Strong, &[(Source, "VHS"), (Other, "Rip")]),
        "dm" => kw(Tail, &[(Source, "Digital Master")]),
        "dmrip" => kw(Strong, &[(Source, "Digital Master"), (Other, "Rip")]),
        "hdrip" => kw(Strong, &[(Other, "HD"), (Other, "Rip")]),
        "rip" => kw(Tail, &[(Other, "Rip")]),
        "scr" => kw(Tail, &[(Other, "Screener")]),
        "screener" => kw(Strong, &[(Other, "Screener")]),
        "r5" => kw(Tail, &[(Other, "Region 5")]),

        // Video codecs.
        "x264" | "h264" | "avc" | "avchd" | "x264hi10p" => kw(Strong, &[(VideoCodec, "H.264")]),
        "x265" | "h265" | "hevc" => kw(Strong, &[(VideoCodec, "H.265")]),
        "hevc10" | "x26510bit" | "hevc10bit" => kw(Strong, &[(VideoCodec, "H.265"), (BitDepth, "10-bit")]),
        "hi10p" | "hi10" => kw(Strong, &[(BitDepth, "10-bit")]),
        "xvid" => kw(Strong, &[(VideoCodec, "Xvid")]),
        "divx" => kw(Strong, &[(VideoCodec, "DivX")]),
        "mpeg2" | "mpg2" | "h262" => kw(Strong, &[(VideoCodec, "MPEG-2")]),
        "h263" => kw(Strong, &[(VideoCodec, "H.263")]),
        "vc1" => kw(Strong, &[(VideoCodec, "VC-1")]),
        "vp7" => kw(Strong, &[(VideoCodec, "VP7")]),
        "vp8" => kw(Strong, &[(VideoCodec, "VP8")]),
        "vp9" => kw(Strong, &[(VideoCodec, "VP9")]),
        "av1" => kw(Strong, &[(VideoCodec, "AV1")]),
        "dxva" => kw(Tail, &[(Marker, "")]),
        "mkv" => kw(Tail, &[(Container, "mkv")]),
        "mp4" => kw(Tail, &[(Container, "mp4")]),
        "avi" => kw(Tail, &[(Container, "avi")]),
        "wmv" => kw(Tail, &[(Container, "wmv")]),

        // Audio codecs (channel counts glued on are stripped by `shaped`).
        "ac3" | "ac3d" | "dolbydigital" => kw(Strong, &[(AudioCodec, "Dolby Digital")]),
        "dd" | "dolby" | "ddex" => kw(Tail, &[(AudioCodec, "Dolby Digital")]),
        "ddp" | "dd+" | "eac3" | "ddplus" | "dolbydigitalplus" => kw(Strong, &[(AudioCodec, "Dolby Digital Plus")]),
        "truehd" | "dolbytruehd" => kw(Strong, &[(AudioCodec, "Dolby TrueHD")]),
        "atmos" | "dolbyatmos" | "ddpatmos" | "truehdatmos" => kw(Strong, &[(AudioCodec, "Dolby Atmos")]),
        "dts" | "dtses" => kw(Strong, &[(AudioCodec, "DTS")]),
        "dtshd" | "dtsma" | "dtshdma" | "dtshdhra" | "dtshra" | "dtshdhr" => kw(Strong, &[(AudioCodec, "DTS-HD")]),
        "dtsx" => kw(Strong, &[(AudioCodec, "DTS:X")]),
        "aac" | "heaac" | "lcaac" | "aaclc" => kw(Strong, &[(AudioCodec, "AAC")]),
        "flac" => kw(Strong, &[(AudioCodec, "FLAC")]),
        "mp3" => kw(Strong, &[(AudioCodec, "MP3")]),
        "lame" => kw(Tail, &[(AudioCodec, "MP3")]),
        "mp2" => kw(Strong, &[(AudioCodec, "MP2")]),
        "opus" => kw(Tail, &[(AudioCodec, "Opus")]),
        "vorbis" => kw(Strong, &[(AudioCodec, "Vorbis")]),
        "lpcm" => kw(Strong, &[(AudioCodec, "LPCM")]),
        "pcm" => kw(Strong, &[(AudioCodec, "PCM")]),
        "ma" | "hra" => kw(Tail, &[(Marker, "")]),

        // Dynamic range.
        "hdr" | "hdr10" => kw(Strong, &[(DynamicRange, "HDR10")]),
        "hdr10+" | "hdr10plus" => kw(Strong, &[(DynamicRange, "HDR10+")]),
        "dv" => kw(Tail, &[(DynamicRange, "Dolby Vision")]),
        "dovi" | "dolbyvision" => kw(Strong, &[(DynamicRange, "Dolby Vision")]),
        "sdr" => kw(Strong, &[(DynamicRange, "Standard Dynamic Range")]),
        "bt2020" => kw(Strong, &[(Other, "BT.2020")]),
        "bt709" => kw(Strong, &[(Marker, "")]),

        // Editions.
        "directorscut" | "directorcut" | "dircut" => kw(Medium, &[(Edition, "Director's Cut")]),
        "dc" => kw(Medium, &[(Edition, "Director's Cut")]),
        "extended" | "extendedcut" | "extendededition" | "extendedversion" => kw(Medium, &[(Edition, "Extended")]),
        "theatrical" | "theatricalcut" | "theatricaledition" | "theatricalversion" => kw(Medium, &[(Edition, "Theatrical")]),
        "unrated" => kw(Medium, &[(Edition, "Unrated")]),
        "uncut" => kw(Medium, &[(Edition, "Uncut")]),
        "uncensored" => kw(Medium, &[(Edition, "Uncensored")]),
        "remastered" | "remaster" | "4kremaster" => kw(Medium, &[(Edition, "Remastered")]),
        "restored" => kw(Tail, &[(Edition, "Restored")]),
        "4krestored" => kw(Medium, &[(Edition, "Restored")]),
        "imax" | "imaxedition" => kw(Medium, &[(Edition, "IMAX")]),
        "criterion" => kw(Tail, &[(Edition, "Criterion")]),
        "criterionedition" | "criterioncollection" => kw(Medium, &[(Edition, "Criterion")]),
        "limited" | "limitededition" => kw(Medium, &[(Edition, "Limited")]),
        "specialedition" | "se" => kw(Medium, &[(Edition, "Special")]),
        "ultimate" => kw(Tail, &[(Edition, "Ultimate")]),
        "ultimateedition" | "ultimatecut" => kw(Medium, &[(Edition, "Ultimate")]),
        "collector" | "collectors" => kw(Tail, &[(Edition, "Collector")]),
        "collectorsedition" | "collectoredition" | "editioncollector" => kw(Medium, &[(Edition, "Collector")]),
        "alternativecut" | "alternatecut" | "alternativeversion" => kw(Medium, &[(Edition, "Alternative Cut")]),
        "festival" => kw(Tail, &[(Edition, "Festival")]),
        "deluxe" => kw(Tail, &[(Edition, "Deluxe")]),
        "deluxeedition" => kw(Medium, &[(Edition, "Deluxe")]),
        "edition" => kw(Medium, &[(Marker, "")]),

        // Streaming services.
        "amzn" => kw(Strong, &[(Streaming, "Amazon Prime")]),
        "amazon" | "amazonprime" => kw(Tail, &[(Streaming, "Amazon Prime")]),
        "amazonhd" => kw(Strong, &[(Streaming, "Amazon Prime"), (Other, "HD")]),
        "nf" => kw(Tail, &[(Streaming, "Netflix")]),
        "netflix" => kw(Tail, &[(Streaming, "Netflix")]),
        "netflixuhd" => kw(Strong, &[(Streaming, "Netflix"), (Other, "Ultra HD")]),
        "netflixuhdrip" => kw(Strong, &[(Streaming, "Netflix"), (Source, "Ultra HDTV"), (Other, "Rip")]),
        "dsnp" | "dsny" | "disney+" => kw(Strong, &[(Streaming, "Disney+")]),
        "hmax" => kw(Strong, &[(Streaming, "HBO Max")]),
        "max" => kw(Tail, &[(Streaming, "Max")]),
        "hbo" => kw(Tail, &[(Streaming, "HBO")]),
        "atvp" | "atv" => kw(Strong, &[(Streaming, "Apple TV+")]),
        "hulu" => kw(Tail, &[(Streaming, "Hulu")]),
        "itunes" => kw(Medium, &[(Streaming, "iTunes")]),
        "ituneshd" => kw(Strong, &[(Streaming, "iTunes"), (Other, "HD")]),
        "pcok" => kw(Strong, &[(Streaming, "Peacock")]),
        "pmtp" => kw(Strong, &[(Streaming, "Paramount+")]),
        "stan" => kw(Tail, &[(Streaming, "Stan")]),
        "crav" => kw(Strong, &[(Streaming, "Crave")]),
        "ae" => kw(Tail, &[(Streaming, "A&E")]),
        "dcu" => kw(Tail, &[(Streaming, "DC Universe")]),
        "viki" => kw(Tail, &[(Streaming, "Viki")]),
        "mbc" | "mbcvod" => kw(Tail, &[(Streaming, "MBC")]),
        "df" => kw(Tail, &[(Streaming, "DramaFever")]),
        "cc" => kw(Tail, &[(Streaming, "Comedy Central")]),
        "bet" | "free" => kw(Tail, &[(Marker, "")]),

        // Release flags.
        "proper" | "repack" | "rerip" => kw(Medium, &[(Proper, "Proper")]),
        "internal" => kw(Medium, &[(Other, "Internal")]),
        "int" => kw(Tail, &[(Other, "Internal")]),
        "remux" => kw(Strong, &[(Other, "Remux")]),
        "mux" => kw(Tail, &[(Other, "Mux")]),
        "complete" | "thecomplete" | "complet" => kw(Medium, &[(Other, "Complete")]),
        "dual" => kw(Tail, &[(Other, "Dual Audio")]),
        "dualaudio" => kw(Medium, &[(Other, "Dual Audio")]),
        // German `DL` (dual language): the original audio as well.
        "dl" => kw(Tail, &[(Language, "mul")]),
        "ws" | "widescreen" => kw(Tail, &[(Other, "Widescreen")]),
        "3d" | "hsbs" | "hou" => kw(Strong, &[(Other, "3D")]),
        "ntsc" => kw(Medium, &[(Other, "NTSC")]),
        "pal" => kw(Tail, &[(Other, "PAL")]),
        "secam" => kw(Medium, &[(Other, "SECAM")]),
        "readnfo" => kw(Medium, &[(Other, "Read NFO")]),
        "nfofix" => kw(Medium, &[(Other, "Fix"), (Other, "Read NFO")]),
        "fix" => kw(Tail, &[(Other, "Fix")]),
        "dirfix" | "samplefix" | "prooffix" | "syncfix" => kw(Medium, &[(Other, "Fix")]),
        "proof" => kw(Tail, &[(Other, "Proof")]),
        "sample" => kw(Tail, &[(Other, "Sample")]),
        "hc" | "hardsub" | "hardsubs" | "hardcoded" => kw(Tail, &[(Other, "Hardcoded Subtitles")]),
        "stv" => kw(Medium, &[(Other, "Straight to Video")]),
        "docu" | "doku" | "documentary" => kw(Medium, &[(Other, "Documentary")]),
        "preair" => kw(Medium, &[(Other, "Preair")]),
        "fansub" => kw(Medium, &[(Other, "Fan Subtitled")]),
        "fastsub" => kw(Medium, &[(Other, "Fast Subtitled")]),
        "oar" => kw(Medium, &[(Other, "Original Aspect Ratio")]),
        "colorized" | "colourized" => kw(Medium, &[(Other, "Colorized")]),
        "hfr" => kw(Medium, &[(Other, "High Frame Rate")]),
        "vfr" => kw(Tail, &[(Other, "Variable Frame Rate")]),
        "hybrid" => kw(Tail, &[(Other, "Hybrid")]),
        "xxx" => kw(Medium, &[(Other, "XXX")]),
        "extras" | "extra" => kw(Tail, &[(Other, "Extras")]),
        "bonus" => kw(Tail, &[(Other, "Bonus")]),
        "trailer" => kw(Tail, &[(Other, "Trailer")]),
        "openmatte" => kw(Medium, &[(Other, "Open Matte")]),
        "2in1" => kw(Strong, &[(Other, "2in1")]),
        "psvita" => kw(Medium, &[(Other, "PS Vita")]),
        "oad" | "ova" => kw(Tail, &[(Other, "Original Animation DVD")]),
        "ona" => kw(Tail, &[(Other, "Original Net Animation")]),
        "ov" => kw(Tail, &[(Other, "Original Video")]),
        "eastcoastfeed" | "eastfeed" => kw(Medium, &[(Other, "East Coast Feed")]),
        "westcoastfeed" | "westfeed" => kw(Medium, &[(Other, "West Coast Feed")]),
        "convert" | "converted" => kw(Medium, &[(Other, "Converted")]),
        "upscaled" | "upscale" => kw(Medium, &[(Other, "Upscaled")]),
        "hq" => kw(Tail, &[(Other, "High Quality")]),
        "lq" => kw(Tail, &[(Other, "Low Quality")]),
        "hr" => kw(Tail, &[(Other, "High Resolution")]),
        "ld" => kw(Tail, &[(Other, "Line Dubbed")]),
        "md" => kw(Tail, &[(Other, "Mic Dubbed")]),
        "line" => kw(Tail, &[(Other, "Line Audio")]),
        "ldtv" => kw(Strong, &[(Other, "Low Definition")]),
        "final" | "custom" | "vo" | "audio" => kw(Tail, &[(Marker, "")]),
        "dubbed" | "dub" | "dublado" => kw(Tail, &[(Dubbed, "und")]),
        "reenc" | "reencoded" => kw(Medium, &[(Other, "Reencoded")]),
        // Country tags after a series title (`Shameless.US`); upper case
        // only, which the keyword pass checks.
        "us" | "uk" | "au" | "nz" => kw(Tail, &[(Marker, "")]),
        "it" => kw(Tail, &[(Language, "Italian")]),

        // Subtitle words; languages themselves are in `language`.
        "sub" | "subs" | "subbed" | "subtitles" | "subtitle" | "subtitulado" | "subtitulos" | "legendado"
        | "legendas" | "legenda" | "st" | "soft" | "subforced" | "forced" =>
            kw(Tail, &[(SubtitleWord, "")]),
        "multisub" | "multisubs" | "multiplesubtitle" | "multiplesubtitles" =>
            kw(Medium, &[(SubtitleLanguage, "mul")]),

        _ => crate::parser::language::classify(key),
    }
}

/// Tags with numbers in them, checked by shape.
fn shaped(key: &str) -> Option<Keyword> {
    let b = key.as_bytes();
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let rest = &key[digits..];

    // 720p, 1080i, 1080p24.
    if (3..=4).contains(&digits) && (rest.starts_with('p') || rest.starts_with('i')) {
        // A frame rate may follow (`1080p24`); other digits do not belong.
        let fps = &rest[1..];
        if fps.is_empty() || matches!(fps, "23" | "24" | "25" | "29" | "30" | "48" | "50" | "59" | "60" | "120") {
            let height: u32 = key[..digits].parse().ok()?;
            let value = standard_height(height, rest.starts_with('i'))?;
            return kw(Strong, value);
        }
    }
    // 1920x1080, 1280*720.
    if (3..=4).contains(&digits) && rest.starts_with('x') {
        let h = &rest[1..];
        if (3..=4).contains(&h.len()) && h.bytes().all(|c| c.is_ascii_digit()) {
            let height: u32 = h.parse().ok()?;
            return kw(Strong, standard_height(height, false).unwrap_or(&[(ScreenSize, "")]));
        }
    }
    // 8bit, 10bits, 10-bit (joined).
    if (1..=2).contains(&digits) && matches!(rest, "bit" | "bits") {
        return match &key[..digits] {
            "8" => kw(Strong, &[(BitDepth, "8-bit")]),
            "10" => kw(Strong, &[(BitDepth, "10-bit")]),
            "12" => kw(Strong, &[(BitDepth, "12-bit")]),
            _ => None,
        };
    }
    // Sizes, bit rates, frame rates, channel counts: 4.7GB, 384kbit, 24fps, 6ch.
    if digits >= 1
        && matches!(
            rest,
            "mb" | "gb"
                | "tb"
                | "mib"
                | "gib"
                | "kbps"
                | "kbit"
                | "kbits"
                | "mbps"
                | "mbit"
                | "mbits"
                | "kb"
                | "fps"
                | "ch"
        )
    {
        return kw(Strong, &[(Marker, "")]);
    }
    // Disc numbers: CD1, CD1of2, 2CD.
    let disc = |s: &str| s.len() <= 2 && !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    let cd =
        key.strip_prefix("cd").is_some_and(|r| disc(r) || r.split_once("of").is_some_and(|(a, b)| disc(a) && disc(b)));
    if cd || (digits == 1 && rest == "cd") {
        return kw(Medium, &[(Marker, "")]);
    }
    // LAME encoder versions (LAME3.98, LAME3*92).
    if key.len() > 4 && key.starts_with("lame") && key[4..].bytes().all(|c| c.is_ascii_digit() || c == b'x') {
        return kw(Strong, &[(AudioCodec, "MP3")]);
    }
    // Audio codec with its channel count glued on: DD5.1, AAC2.0, DDP51,
    // Atmos7.1, FLAC1.0, AC3.5.1 (all arrive here without the dot).
    for suffix in ["51", "71", "20", "10", "21", "61", "2", "6"] {
        if let Some(codec) = key.strip_suffix(suffix)
            && let Some(k) = table(codec)
            && k.effects.iter().any(|(f, _)| *f == AudioCodec)
        {
            return kw(Strong, k.effects);
        }
    }
    None
}

/// `720p`-style value for a standard frame height.
fn standard_height(h: u32, interlaced: bool) -> Option<&'static [(Field, &'static str)]> {
    Some(match (h, interlaced) {
        (1080, true) => &[(ScreenSize, "1080i")],
        (576, true) => &[(ScreenSize, "576i")],
        (480, true) => &[(ScreenSize, "480i")],
        (_, true) => return None,
        (240, _) => &[(ScreenSize, "240p")],
        (360, _) => &[(ScreenSize, "360p")],
        (368, _) => &[(ScreenSize, "368p")],
        (480, _) => &[(ScreenSize, "480p")],
        (540, _) => &[(ScreenSize, "540p")],
        (576, _) => &[(ScreenSize, "576p")],
        (720, _) => &[(ScreenSize, "720p")],
        (900, _) => &[(ScreenSize, "900p")],
        (1080, _) => &[(ScreenSize, "1080p")],
        (1440, _) => &[(ScreenSize, "1440p")],
        (2160, _) => &[(ScreenSize, "2160p")],
        (4320, _) => &[(ScreenSize, "4320p")],
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(key: &str, field: Field) -> Option<&'static str> {
        classify(key)?.effects.iter().find(|(f, _)| *f == field).map(|(_, v)| *v)
    }

    #[test]
    fn shapes() {
        assert_eq!(value("1080p", ScreenSize), Some("1080p"));
        assert_eq!(value("1080p24", ScreenSize), Some("1080p"));
        assert_eq!(value("1280x720", ScreenSize), Some("720p"));
        assert_eq!(value("1444x866", ScreenSize), Some(""));
        assert_eq!(value("10bit", BitDepth), Some("10-bit"));
        assert_eq!(value("dd51", AudioCodec), Some("Dolby Digital"));
        assert_eq!(value("ddp51", AudioCodec), Some("Dolby Digital Plus"));
        assert_eq!(value("aac20", AudioCodec), Some("AAC"));
        assert!(classify("146gb").is_some());
        assert!(classify("1999").is_none());
        assert!(classify("the").is_none());
    }
}
