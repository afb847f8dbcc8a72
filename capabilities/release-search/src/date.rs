//! RSS `pubDate`s (RFC 2822, `Sat, 02 Mar 2024 10:00:00 +0100`) turned into
//! RFC 3339 UTC (`2024-03-02T09:00:00Z`), so callers compare and sort dates
//! as plain strings.

const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day count from [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Offset east of UTC in seconds for an RFC 2822 zone.
fn zone_offset(zone: &str) -> Option<i64> {
    match zone.to_ascii_uppercase().as_str() {
        "GMT" | "UT" | "UTC" | "Z" => return Some(0),
        _ => {}
    }
    let (sign, digits) = match zone.as_bytes().first()? {
        b'+' => (1, &zone[1..]),
        b'-' => (-1, &zone[1..]),
        _ => return None,
    };
    if digits.len() != 4 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let hours: i64 = digits[..2].parse().ok()?;
    let minutes: i64 = digits[2..].parse().ok()?;
    Some(sign * (hours * 3600 + minutes * 60))
}

/// Converts an RFC 2822 date; `None` when it is not one.
pub fn rfc2822_to_rfc3339(text: &str) -> Option<String> {
    let text = text.trim();
    // The weekday is optional and says nothing the date does not.
    let text = text.split_once(',').map_or(text, |(_, rest)| rest);
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [day, month, year, time, zone] = parts.as_slice() else { return None };
    let day: u32 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
    let month = MONTHS.iter().position(|m| month.eq_ignore_ascii_case(m))? as u32 + 1;
    let year: i64 = year.parse().ok().filter(|y| (1970..=9999).contains(y))?;
    let mut clock = time.split(':').map(|p| p.parse::<i64>().ok());
    let (hour, minute) = (clock.next()??, clock.next()??);
    let second = clock.next().unwrap_or(Some(0))?;
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let local = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    let utc = local - zone_offset(zone)?;
    let (y, mo, d) = civil_from_days(utc.div_euclid(86_400));
    let secs = utc.rem_euclid(86_400);
    Some(format!("{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs % 3600 / 60, secs % 60))
}

#[cfg(test)]
mod tests {
    use super::rfc2822_to_rfc3339 as convert;

    #[test]
    fn rss_dates_become_utc_rfc3339() {
        assert_eq!(convert("Sat, 02 Mar 2024 10:00:00 +0000").as_deref(), Some("2024-03-02T10:00:00Z"));
        assert_eq!(convert("Sat, 02 Mar 2024 00:30:00 +0100").as_deref(), Some("2024-03-01T23:30:00Z"));
        assert_eq!(convert("Thu, 29 Feb 2024 22:00:00 -0500").as_deref(), Some("2024-03-01T03:00:00Z"));
        assert_eq!(convert("1 Jan 2025 12:00 GMT").as_deref(), Some("2025-01-01T12:00:00Z"));
    }

    #[test]
    fn other_text_is_not_a_date() {
        assert_eq!(convert("2024-03-02T10:00:00Z"), None);
        assert_eq!(convert("Sat, 02 Foo 2024 10:00:00 +0000"), None);
        assert_eq!(convert("Sat, 02 Mar 2024 25:00:00 +0000"), None);
        assert_eq!(convert("Sat, 02 Mar 2024 10:00:00 EST5"), None);
    }
}
