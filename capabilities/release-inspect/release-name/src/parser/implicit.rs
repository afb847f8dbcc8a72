//! Bare episode numbers, for names without an explicit marker
//! (`Show.117.HDTV`, `Show.1013.HDTV`, `[Grp] Show - 05`, `[Grp] Show -
//! 1052`, `05 - Episode Name`, `Show.Part.01.720p`), found after the
//! keywords, the title start and the years, since whether a number is an
//! episode depends on what is around it.

use super::Role;
use super::episode::{Episodes, continuation, versioned};
use super::token::Tokens;

/// Bare episode numbers, for names without an explicit marker. `start` is
/// the first title token; `stop` the first certain tag (numbers after it
/// are technical). `anime` says three-digit numbers are absolute episode
/// numbers (`One Piece 679`) rather than season and episode (`117` is
/// 1x17).
pub fn find(t: &Tokens, roles: &mut [Role], start: usize, stop: usize, anime: bool, has_year: bool) -> Episodes {
    let mut found = Episodes::default();
    let usable = |i: usize, roles: &[Role]| {
        roles[i] == Role::Free
            && (t.list[i].bracket.is_none() || t.alone_in_bracket(i))
            && versioned(t.low(i)).is_some()
    };
    // `05 - Name`, `003. Name`, `[Grp] 06 Name`: a number first.
    if start < t.len() && usable(start, roles) && !has_year {
        let (n, d) = versioned(t.low(start)).unwrap_or_default();
        let sep = t.sep_after(start);
        let more = start + 1 < t.len() && !t.is_digits(start + 1);
        if d <= 3 && sep.contains([' ', '-']) && more {
            found.push(n);
            let last = continuation(t, roles, start, &mut found, false);
            found.mark(roles, start, last);
            found.leading = true;
            return found;
        }
        if d <= 3 && sep.contains('-') && start + 1 < t.len() && t.is_digits(start + 1) {
            // `003-004. Name`.
            found.push(n);
            let last = continuation(t, roles, start, &mut found, false);
            found.mark(roles, start, last);
            found.leading = true;
            return found;
        }
    }
    for i in start + 1..stop.min(t.len()) {
        if !usable(i, roles) {
            continue;
        }
        let (n, digits) = versioned(t.low(i)).unwrap_or_default();
        let prev = t.low(i - 1);
        // `Show.Part.01.720p`, `Show.Part.01.Name.720p`: a zero-padded part
        // in a name with tags and without a year numbers an episode of a
        // miniseries (a film's part has its year, and is written `Part 3`).
        let padded = digits == 2 && t.low(i).starts_with('0');
        if matches!(prev, "part" | "pt") && padded && !has_year && stop < t.len() {
            found.push(n);
            found.mark(roles, i - 1, i);
            break;
        }
        if matches!(prev, "part" | "pt" | "cd" | "vol" | "volume" | "chapter" | "disc" | "dvd" | "no") {
            continue;
        }
        let sep = t.sep_before(i);
        let dashed = sep.contains('-') && (sep.len() >= 2 || !t.raw(i - 1).bytes().all(|b| b.is_ascii_alphanumeric()));
        let next_usable = i + 1 < t.len() && usable(i + 1, roles) && !t.sep_before(i + 1).contains('-');
        let next_year = i + 1 < t.len() && roles[i + 1] == Role::Year;
        if digits == 1 && !dashed {
            continue;
        }
        // `Nine Lives - 100 Years Later - 01`: a number that words follow,
        // with another dashed number later, is part of the title.
        let worded = i + 1 < stop && roles[i + 1] == Role::Free && !t.is_digits(i + 1);
        if dashed && worded && (i + 2..stop).any(|j| usable(j, roles) && super::title::dash_boundary(t.sep_before(j))) {
            continue;
        }
        if !dashed && (next_usable || next_year) {
            continue;
        }
        let leading_zero = t.low(i).starts_with('0');
        // `476-479`: a range of three-digit numbers is absolute.
        let ranged = i + 1 < t.len() && t.sep_before(i + 1) == "-" && t.raw(i + 1).len() == 3 && t.is_digits(i + 1);
        match digits {
            3 if !(anime || leading_zero || ranged) && n >= 100 => {
                found.season = Some(n / 100);
                found.push(n % 100);
            }
            // `[Grp] Show - 1052 [1080p]`: a long-running anime's episode.
            4 if !leading_zero && anime && dashed => found.push(n),
            // `Show.1013.HDTV`: season 10, episode 13, right before the
            // tags; never a year-like number (`Blade Runner 2049`).
            4 if !leading_zero && i + 1 == stop && (1000..1900).contains(&n) && n % 100 > 0 => {
                found.season = Some(n / 100);
                found.push(n % 100);
            }
            4 if !leading_zero => continue,
            4 => {
                found.season = Some(n / 100);
                found.push(n % 100);
            }
            _ => found.push(n),
        }
        let last = continuation(t, roles, i, &mut found, false);
        found.mark(roles, i, last);
        break;
    }
    found
}
