//! The calendar: the wanted episodes that air, or aired, in a span of days
//! (with where each stands), and the releases handed to the download client
//! in it. A span is at most [`MAX_DAYS`] days; without one it runs from a
//! week ago to two weeks ahead.

use serde::Serialize;
use sqlx::Row;
use time::{Date, Duration, Month};

use super::episodes::{state_of, today};
use super::{Domain, DomainError};
use capstan_contract::status::EpisodeState;

/// The longest span one calendar covers, in days.
pub const MAX_DAYS: i64 = 92;
/// Most entries of each kind one calendar lists.
const MAX_ENTRIES: i64 = 1000;

/// What a span of days holds.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Calendar {
    /// The first and last day, `YYYY-MM-DD`.
    pub from: String,
    pub to: String,
    /// Monitored episodes airing in the span, by air date.
    pub episodes: Vec<CalendarEpisode>,
    /// Releases handed to the download client in the span, newest first.
    pub grabbed: Vec<Grab>,
}

/// An episode on the calendar.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CalendarEpisode {
    pub entity_id: String,
    pub series: String,
    pub year: Option<i64>,
    pub season: i64,
    pub episode: i64,
    pub title: Option<String>,
    pub air_date: String,
    pub state: EpisodeState,
}

/// A release handed to the download client.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Grab {
    pub plan_id: String,
    pub entity_id: String,
    pub title: String,
    pub season: Option<i64>,
    /// The release's name.
    pub release: String,
    /// When it was handed over, milliseconds since the epoch.
    pub at: i64,
}

/// A `YYYY-MM-DD` day.
fn day(text: &str, what: &str) -> Result<Date, DomainError> {
    let bad = || DomainError::Invalid(format!("{what} {text:?} is not a day written YYYY-MM-DD"));
    let mut parts = text.split('-');
    let (Some(y), Some(m), Some(d), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return Err(bad());
    }
    let (y, m, d) = (
        y.parse::<i32>().map_err(|_| bad())?,
        m.parse::<u8>().map_err(|_| bad())?,
        d.parse::<u8>().map_err(|_| bad())?,
    );
    Date::from_calendar_date(y, Month::try_from(m).map_err(|_| bad())?, d).map_err(|_| bad())
}

fn written(d: Date) -> String {
    format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

/// The span asked for, checked: both days real, `from` not after `to`, at
/// most [`MAX_DAYS`] days.
pub(crate) fn span(from: Option<&str>, to: Option<&str>) -> Result<(Date, Date), DomainError> {
    let today = day(&today(), "today").map_err(|_| DomainError::Invalid("the clock is not on a real day".into()))?;
    let from = from.map(|f| day(f, "from")).transpose()?.unwrap_or(today - Duration::days(7));
    let to = to.map(|t| day(t, "to")).transpose()?.unwrap_or(from + Duration::days(21));
    if from > to {
        return Err(DomainError::Invalid(format!("from {} is after to {}", written(from), written(to))));
    }
    if (to - from).whole_days() >= MAX_DAYS {
        return Err(DomainError::Invalid(format!("a calendar covers at most {MAX_DAYS} days")));
    }
    Ok((from, to))
}

impl Domain {
    /// What the days from `from` to `to` hold (see [`span`]).
    pub async fn calendar(&self, from: Option<&str>, to: Option<&str>) -> Result<Calendar, DomainError> {
        let (from, to) = span(from, to)?;
        let (first, last) = (written(from), written(to));
        let rows = sqlx::query(
            "SELECT e.*, m.title AS series, m.year AS series_year FROM media_episode e \
             JOIN media_entity m ON m.id = e.entity_id \
             WHERE e.monitored = 1 AND e.air_date >= $1 AND e.air_date <= $2 \
             ORDER BY e.air_date, m.title, e.season, e.episode LIMIT $3",
        )
        .bind(&first)
        .bind(&last)
        .bind(MAX_ENTRIES)
        .fetch_all(&self.db.pool)
        .await?;
        let today = today();
        let mut episodes = Vec::with_capacity(rows.len());
        for r in &rows {
            let file: Option<String> = r.try_get("file")?;
            let air_date: String = r.try_get("air_date")?;
            episodes.push(CalendarEpisode {
                entity_id: r.try_get("entity_id")?,
                series: r.try_get("series")?,
                year: r.try_get("series_year")?,
                season: r.try_get("season")?,
                episode: r.try_get("episode")?,
                title: r.try_get("title")?,
                state: state_of(true, file.as_deref(), Some(&air_date), &today),
                air_date,
            });
        }
        let start_ms = (from.midnight().assume_utc().unix_timestamp()) * 1000;
        let end_ms = ((to + Duration::days(1)).midnight().assume_utc().unix_timestamp()) * 1000;
        let rows = sqlx::query(
            "SELECT p.id AS plan_id, p.updated_at AS at, s.entity_id, s.season, m.title, r.title AS release \
             FROM acquisition_plan p JOIN media_slot s ON s.id = p.slot_id \
             JOIN media_entity m ON m.id = s.entity_id JOIN source_release r ON r.id = p.source_release_id \
             WHERE p.status = 'submitted' AND p.updated_at >= $1 AND p.updated_at < $2 \
             ORDER BY p.updated_at DESC, p.id LIMIT $3",
        )
        .bind(start_ms)
        .bind(end_ms)
        .bind(MAX_ENTRIES)
        .fetch_all(&self.db.pool)
        .await?;
        let grabbed = rows
            .iter()
            .map(|r| {
                Ok(Grab {
                    plan_id: r.try_get("plan_id")?,
                    entity_id: r.try_get("entity_id")?,
                    title: r.try_get("title")?,
                    season: r.try_get("season")?,
                    release: r.try_get("release")?,
                    at: r.try_get("at")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()?;
        Ok(Calendar { from: first, to: last, episodes, grabbed })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_is_two_real_days_in_order_and_not_too_long() {
        let (from, to) = span(Some("2026-02-27"), Some("2026-03-01")).unwrap();
        assert_eq!((written(from), written(to)), ("2026-02-27".to_string(), "2026-03-01".to_string()));
        for (f, t) in [
            (Some("2026-02-30"), None),
            (Some("2026-2-27"), None),
            (Some("27/02/2026"), None),
            (Some("2026-03-02"), Some("2026-03-01")),
            (Some("2026-01-01"), Some("2026-12-31")),
            (None, Some("x")),
        ] {
            assert!(matches!(span(f, t), Err(DomainError::Invalid(_))), "{f:?} {t:?}");
        }
        let (from, to) = span(None, None).unwrap();
        assert_eq!((to - from).whole_days(), 21);
    }
}
