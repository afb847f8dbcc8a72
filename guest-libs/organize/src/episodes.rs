//! Season and episode numbers read from a file name: `S01E02`,
//! `S01E02E03`, `S01E02-E03` (a range), `S01E02-03` and `1x02`; and, for
//! names with none of these, an anime-style absolute number
//! (`[Group] Show - 12 [1080p].mkv`, `Show - 012v2.mkv`), which the
//! series' episodes map to a season and episode. A season pack's files
//! each name their episode; the release name alone cannot say which file
//! is which.

/// Season and episodes found in a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodeRef {
    pub season: u32,
    pub episodes: Vec<u32>,
}

fn digits(bytes: &[u8], at: usize, max: usize) -> Option<(u32, usize)> {
    let len = bytes[at..].iter().take(max + 1).take_while(|b| b.is_ascii_digit()).count();
    if len == 0 || len > max {
        return None;
    }
    let text = std::str::from_utf8(&bytes[at..at + len]).ok()?;
    Some((text.parse().ok()?, at + len))
}

fn boundary(bytes: &[u8], at: usize) -> bool {
    at == 0 || !bytes[at - 1].is_ascii_alphanumeric()
}

/// Episodes after the first `E<n>` at `at`: more `E<n>`, `-E<n>` or `-<n>`.
fn more_episodes(bytes: &[u8], mut at: usize, first: u32) -> Vec<u32> {
    let mut found = vec![first];
    loop {
        let mut next = at;
        let dash = bytes.get(next) == Some(&b'-');
        if dash {
            next += 1;
        }
        let e = matches!(bytes.get(next), Some(b'e' | b'E'));
        if e {
            next += 1;
        }
        if !dash && !e {
            break;
        }
        let Some((n, end)) = digits(bytes, next, 3) else { break };
        let last = *found.last().unwrap_or(&0);
        if dash && n > last && n - last < 50 {
            // A range: `E01-E03` is 1, 2 and 3.
            found.extend(last + 1..=n);
        } else if n > last {
            found.push(n);
        } else {
            break;
        }
        at = end;
    }
    found
}

/// The first season/episode marker in `name`, if any.
pub fn parse(name: &str) -> Option<EpisodeRef> {
    let bytes = name.as_bytes();
    for i in 0..bytes.len() {
        if matches!(bytes[i], b's' | b'S') && boundary(bytes, i) {
            let Some((season, end)) = digits(bytes, i + 1, 3) else { continue };
            if !matches!(bytes.get(end), Some(b'e' | b'E')) {
                continue;
            }
            let Some((first, end)) = digits(bytes, end + 1, 3) else { continue };
            return Some(EpisodeRef { season, episodes: more_episodes(bytes, end, first) });
        }
        if bytes[i].is_ascii_digit() && boundary(bytes, i) {
            let Some((season, end)) = digits(bytes, i, 2) else { continue };
            if !matches!(bytes.get(end), Some(b'x' | b'X')) {
                continue;
            }
            let Some((first, end)) = digits(bytes, end + 1, 3) else { continue };
            if bytes.get(end).is_some_and(|b| b.is_ascii_alphanumeric()) {
                // `1920x1080` is a resolution, not season 19.
                continue;
            }
            return Some(EpisodeRef { season, episodes: vec![first] });
        }
    }
    None
}

/// An anime-style absolute episode number: ` - <n>` (1 to 4 digits, an
/// optional `v2`-style version) followed by the end of the name, a space,
/// a bracket or a dot before the extension. Only names with no season
/// marker are read this way.
pub fn parse_absolute(name: &str) -> Option<u32> {
    if parse(name).is_some() {
        return None;
    }
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    let bytes = stem.as_bytes();
    let mut found = None;
    let mut at = 0;
    while let Some(offset) = stem[at..].find(" - ") {
        let start = at + offset + 3;
        at = start;
        let Some((n, mut end)) = digits(bytes, start, 4) else { continue };
        if matches!(bytes.get(end), Some(b'v' | b'V')) && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
            end += 2;
        }
        if end == bytes.len() || matches!(bytes[end], b' ' | b'[' | b'(' | b'.') {
            found = Some(n);
        }
    }
    found.filter(|n| *n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anime_numbers_are_absolute() {
        assert_eq!(parse_absolute("[SubsPlease] Sousou no Frieren - 12 (1080p) [ABCD1234].mkv"), Some(12));
        assert_eq!(parse_absolute("Show - 112v2 [1080p].mkv"), Some(112));
        assert_eq!(parse_absolute("Show - 03.mkv"), Some(3));
        assert_eq!(parse_absolute("Show - S01E03 - Title.mkv"), None, "a marker wins");
        assert_eq!(parse_absolute("Show - The 2nd Movie.mkv"), None);
        assert_eq!(parse_absolute("Dune.Part.Two.2024.2160p.mkv"), None);
    }

    fn eps(name: &str) -> Option<(u32, Vec<u32>)> {
        parse(name).map(|r| (r.season, r.episodes))
    }

    #[test]
    fn common_markers() {
        assert_eq!(eps("Severance.S02E05.1080p.WEB-DL.mkv"), Some((2, vec![5])));
        assert_eq!(eps("show.s01e01e02.mkv"), Some((1, vec![1, 2])));
        assert_eq!(eps("Show - S01E01-E03 - Pilot.mkv"), Some((1, vec![1, 2, 3])));
        assert_eq!(eps("Show.S01E09-10.mkv"), Some((1, vec![9, 10])));
        assert_eq!(eps("Show 3x07 Title.avi"), Some((3, vec![7])));
        assert_eq!(eps("Movie.2024.1920x1080.mkv"), None);
        assert_eq!(eps("Dune.Part.Two.2024.2160p.mkv"), None);
        assert_eq!(eps("Stargate.SG-1.S10E20.mkv"), Some((10, vec![20])));
    }
}
