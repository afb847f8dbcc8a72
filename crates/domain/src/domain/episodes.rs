//! A series' episodes: recorded from the catalogue beside the entity (their
//! numbers, titles, air dates and absolute numbers), monitored or not, and
//! marked as had when an import puts a file in the library for them. A
//! season slot stays what a search and a plan fetch for; its episodes say
//! what it still lacks, so an import that leaves a monitored aired episode
//! missing puts the slot back to `wanted` instead of `satisfied`.

use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};

use capstan_contract::ops::drafts::NewEpisode;
use capstan_contract::ops::queries::SeasonProgress;
use capstan_contract::records::Episode;
use capstan_contract::status::EpisodeState;

use super::{Domain, DomainError, require};
use crate::store::now_ms;

/// Most episodes one entity may list (long daily shows have a few
/// thousand); more is not a series a library fetches.
pub const MAX_EPISODES: usize = 20_000;
/// Highest season or episode number accepted.
const MAX_NUMBER: i64 = 99_999;
/// Longest episode title kept, in characters.
const MAX_TITLE: usize = 300;
/// Episodes written by one statement (8 parameters each, well inside
/// either backend's limit).
const UPSERT_ROWS: usize = 100;

/// Today's date in UTC, `YYYY-MM-DD`: what an air date is read against.
pub(crate) fn today() -> String {
    let d = time::OffsetDateTime::now_utc().date();
    format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

/// Whether `date` is a `YYYY-MM-DD` date.
fn is_date(date: &str) -> bool {
    let b = date.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter().enumerate().all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

/// Where an episode stands on `today`.
pub(crate) fn state_of(monitored: bool, file: Option<&str>, air_date: Option<&str>, today: &str) -> EpisodeState {
    match (monitored, file, air_date) {
        (false, _, _) => EpisodeState::Unmonitored,
        (true, Some(_), _) => EpisodeState::Have,
        (true, None, Some(date)) if date <= today => EpisodeState::Missing,
        _ => EpisodeState::NotAired,
    }
}

fn episode_from_row(r: &AnyRow, today: &str) -> Result<Episode, sqlx::Error> {
    let monitored: i64 = r.try_get("monitored")?;
    let file: Option<String> = r.try_get("file")?;
    let air_date: Option<String> = r.try_get("air_date")?;
    let state = state_of(monitored != 0, file.as_deref(), air_date.as_deref(), today);
    Ok(Episode {
        entity_id: r.try_get("entity_id")?,
        season: r.try_get("season")?,
        episode: r.try_get("episode")?,
        absolute: r.try_get("absolute")?,
        title: r.try_get("title")?,
        air_date,
        monitored: monitored != 0,
        file,
        file_release_id: r.try_get("file_release_id")?,
        state,
    })
}

/// Refuses episodes a catalogue would not list: numbers out of range, a
/// date that is not one, a season listed twice over.
pub(super) fn check_episodes(episodes: &[NewEpisode]) -> Result<(), DomainError> {
    require(episodes.len() <= MAX_EPISODES, || {
        format!("{} episodes are more than the {MAX_EPISODES} a series may list", episodes.len())
    })?;
    let mut seen = std::collections::HashSet::new();
    for e in episodes {
        require((0..=MAX_NUMBER).contains(&e.season) && (0..=MAX_NUMBER).contains(&e.episode), || {
            format!("season {} episode {} is not a number from 0 to {MAX_NUMBER}", e.season, e.episode)
        })?;
        require(seen.insert((e.season, e.episode)), || format!("S{:02}E{:02} is listed twice", e.season, e.episode))?;
        if let Some(date) = &e.air_date {
            require(is_date(date), || {
                format!("air date {date:?} of S{:02}E{:02} is not YYYY-MM-DD", e.season, e.episode)
            })?;
        }
    }
    Ok(())
}

/// The absolute number of each regular episode: its place counted over the
/// regular seasons in order, from the episode counts the entity lists.
fn absolute_of(seasons: &[Value], season: i64, episode: i64) -> Option<i64> {
    if season < 1 || episode < 1 {
        return None;
    }
    let before: i64 = seasons
        .iter()
        .filter_map(|s| Some((s.get("number")?.as_i64()?, s.get("episodeCount")?.as_i64()?)))
        .filter(|(n, _)| *n >= 1 && *n < season)
        .map(|(_, count)| count.max(0))
        .sum();
    Some(before + episode)
}

/// Records `episodes` of entity `entity_id` in `tx`: a new one monitored
/// when its season is wanted (a slot of it that is not `unwanted`: an
/// episode announced after the season was wanted is wanted too), known
/// ones with their titles, air dates and absolute numbers refreshed
/// (their monitoring and files kept).
pub(super) async fn upsert_episodes_in(
    tx: &mut Transaction<'_, Any>,
    entity_id: &str,
    seasons: &[Value],
    episodes: &[NewEpisode],
) -> Result<(), DomainError> {
    check_episodes(episodes)?;
    if episodes.is_empty() {
        return Ok(());
    }
    let now = now_ms();
    // Several rows a statement: a long series is hundreds of episodes.
    for chunk in episodes.chunks(UPSERT_ROWS) {
        let sql = format!(
            "INSERT INTO media_episode (entity_id, season, episode, absolute, title, air_date, created_at, \
             updated_at, monitored, file) VALUES {} \
             ON CONFLICT (entity_id, season, episode) DO UPDATE SET absolute = excluded.absolute, \
             title = excluded.title, air_date = excluded.air_date, updated_at = excluded.updated_at",
            rows_monitored_by_season(chunk.len())
        );
        let mut query = sqlx::query(&sql);
        for e in chunk {
            let title = e.title.as_deref().map(str::trim).filter(|t| !t.is_empty());
            let title: Option<String> = title.map(|t| t.chars().take(MAX_TITLE).collect());
            query = query
                .bind(entity_id)
                .bind(e.season)
                .bind(e.episode)
                .bind(absolute_of(seasons, e.season, e.episode))
                .bind(title)
                .bind(e.air_date.clone())
                .bind(now)
                .bind(now);
        }
        query.execute(&mut **tx).await?;
    }
    // Each call is bounded, and so is what calls add up to: a series that
    // lists more is refused, and the transaction undone.
    let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM media_episode WHERE entity_id = $1")
        .bind(entity_id)
        .fetch_one(&mut **tx)
        .await?;
    require(total <= MAX_EPISODES as i64, || {
        format!("the series would list {total} episodes, more than the {MAX_EPISODES} one may have")
    })?;
    Ok(())
}

/// `rows` rows of 8 parameters each (entity id and season first), then
/// `monitored` — whether the row's season has a slot still wanted — and
/// no file.
fn rows_monitored_by_season(rows: usize) -> String {
    let row = |r: usize| {
        let first = r * 8;
        let marks: Vec<String> = (1..=8).map(|k| format!("${}", first + k)).collect();
        format!(
            "({}, CASE WHEN EXISTS (SELECT 1 FROM media_slot WHERE entity_id = ${} AND season = ${} \
             AND status <> 'unwanted') THEN 1 ELSE 0 END, NULL)",
            marks.join(", "),
            first + 1,
            first + 2
        )
    };
    (0..rows).map(row).collect::<Vec<_>>().join(", ")
}

/// Monitors (or not) every episode of `seasons` of `entity_id` in `tx`.
pub(super) async fn monitor_seasons_in(
    tx: &mut Transaction<'_, Any>,
    entity_id: &str,
    seasons: &[i64],
    monitored: bool,
) -> Result<(), DomainError> {
    for season in seasons {
        sqlx::query("UPDATE media_episode SET monitored = $3, updated_at = $4 WHERE entity_id = $1 AND season = $2")
            .bind(entity_id)
            .bind(season)
            .bind(i64::from(monitored))
            .bind(now_ms())
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// Marks the episodes an import put in the library, as `(season, episode,
/// file)`, as had, from release `release_id`.
pub(super) async fn record_files_in(
    tx: &mut Transaction<'_, Any>,
    entity_id: &str,
    files: &[(i64, i64, String)],
    release_id: &str,
) -> Result<(), DomainError> {
    for (season, episode, file) in files {
        sqlx::query(
            "UPDATE media_episode SET file = $4, file_release_id = $6, updated_at = $5 \
             WHERE entity_id = $1 AND season = $2 AND episode = $3",
        )
        .bind(entity_id)
        .bind(season)
        .bind(episode)
        .bind(file)
        .bind(now_ms())
        .bind(release_id)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// The episodes an organization's items name: `(season, episode, file)`
/// for each `{"season", "episode"}` in an item's `episodes`, the file
/// being the item's destination.
pub(super) fn files_of_items(items: &Value) -> Vec<(i64, i64, String)> {
    let mut files = Vec::new();
    for item in items.as_array().into_iter().flatten() {
        let Some(destination) = item.get("destination").and_then(Value::as_str) else { continue };
        for e in item.get("episodes").and_then(Value::as_array).into_iter().flatten() {
            if let (Some(s), Some(n)) =
                (e.get("season").and_then(Value::as_i64), e.get("episode").and_then(Value::as_i64))
            {
                files.push((s, n, destination.to_string()));
            }
        }
    }
    files
}

impl Domain {
    /// The episodes of entity `entity_id`, in season and episode order.
    pub async fn episodes(&self, entity_id: &str) -> Result<Vec<Episode>, DomainError> {
        self.entity(entity_id).await?;
        let rows = sqlx::query("SELECT * FROM media_episode WHERE entity_id = $1 ORDER BY season, episode")
            .bind(entity_id)
            .fetch_all(&self.db.pool)
            .await?;
        let today = today();
        Ok(rows.iter().map(|r| episode_from_row(r, &today)).collect::<Result<_, _>>()?)
    }

    /// How each season of `entity_id` stands, by season number.
    pub(crate) async fn season_progress(
        &self,
        entity_id: &str,
    ) -> Result<std::collections::BTreeMap<i64, SeasonProgress>, DomainError> {
        let mut seasons = std::collections::BTreeMap::<i64, SeasonProgress>::new();
        for e in self.episodes(entity_id).await? {
            let p = seasons.entry(e.season).or_default();
            p.total += 1;
            match e.state {
                EpisodeState::Have => p.have += 1,
                EpisodeState::Missing => p.missing += 1,
                EpisodeState::NotAired => p.not_aired += 1,
                EpisodeState::Unmonitored => p.unmonitored += 1,
            }
        }
        Ok(seasons)
    }

    /// Monitors or unmonitors episodes of a season (all of it, or only
    /// `episodes`); answers the season's episodes. A season whose slot was
    /// satisfied becomes wanted again when a newly monitored episode has
    /// aired and is missing, and one that was wanted is satisfied once
    /// nothing monitored is left missing.
    pub async fn monitor_episodes(
        &self,
        entity_id: &str,
        season: i64,
        episodes: Option<&[i64]>,
        monitored: bool,
    ) -> Result<Vec<Episode>, DomainError> {
        let known: Vec<i64> =
            self.episodes(entity_id).await?.into_iter().filter(|e| e.season == season).map(|e| e.episode).collect();
        if known.is_empty() {
            return Err(DomainError::NotFound(format!("season {season} of this title has no episodes recorded")));
        }
        if let Some(asked) = episodes {
            require(!asked.is_empty(), || "name at least one episode, or leave episodes out for the season".into())?;
            if let Some(unknown) = asked.iter().find(|e| !known.contains(e)) {
                return Err(DomainError::NotFound(format!("season {season} has no episode {unknown}")));
            }
        }
        let slot = self.season_slot(entity_id, season).await?;
        let profile = match &slot {
            Some(slot) => self.profile_of(slot).await?,
            None => None,
        };
        let mut tx = self.db.begin_write().await?;
        let now = now_ms();
        for episode in episodes.unwrap_or(&known) {
            sqlx::query(
                "UPDATE media_episode SET monitored = $4, updated_at = $5 WHERE entity_id = $1 AND season = $2 AND episode = $3",
            )
            .bind(entity_id)
            .bind(season)
            .bind(episode)
            .bind(i64::from(monitored))
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        if let Some(slot) = &slot {
            super::held::settle_in(&mut tx, slot, profile.as_ref()).await?;
        }
        if monitored {
            // Newly wanted episodes may have aired long ago: the season is
            // due a search.
            sqlx::query("UPDATE media_slot SET searched_at = NULL WHERE entity_id = $1 AND season = $2")
                .bind(entity_id)
                .bind(season)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(self.episodes(entity_id).await?.into_iter().filter(|e| e.season == season).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_episode_is_missing_only_once_it_has_aired() {
        let today = "2026-12-07";
        assert_eq!(state_of(true, None, Some("2026-12-07"), today), EpisodeState::Missing);
        assert_eq!(state_of(true, None, Some("2026-12-08"), today), EpisodeState::NotAired);
        assert_eq!(state_of(true, None, None, today), EpisodeState::NotAired);
        assert_eq!(state_of(true, Some("x.mkv"), Some("2026-12-08"), today), EpisodeState::Have);
        assert_eq!(state_of(false, None, Some("2020-01-01"), today), EpisodeState::Unmonitored);
    }

    #[test]
    fn absolute_numbers_count_over_the_regular_seasons() {
        let seasons = vec![
            json!({"number": 0, "episodeCount": 3}),
            json!({"number": 1, "episodeCount": 12}),
            json!({"number": 2, "episodeCount": 13}),
        ];
        assert_eq!(absolute_of(&seasons, 1, 5), Some(5));
        assert_eq!(absolute_of(&seasons, 2, 1), Some(13));
        assert_eq!(absolute_of(&seasons, 3, 2), Some(27));
        assert_eq!(absolute_of(&seasons, 0, 1), None);
    }

    #[test]
    fn listed_episodes_are_checked() {
        let e = |season, episode, air_date: Option<&str>| NewEpisode {
            season,
            episode,
            title: None,
            air_date: air_date.map(str::to_string),
        };
        assert!(check_episodes(&[e(1, 1, Some("2024-02-27")), e(1, 2, None)]).is_ok());
        assert!(check_episodes(&[e(1, 1, None), e(1, 1, None)]).is_err());
        assert!(check_episodes(&[e(-1, 1, None)]).is_err());
        assert!(check_episodes(&[e(1, 1, Some("27/02/2024"))]).is_err());
    }

    #[test]
    fn an_items_episodes_are_its_files() {
        let items = json!([
            {"source": "a/b.mkv", "destination": "Show (2024)/Season 01/Show - S01E01E02.mkv", "size": 1,
             "episodes": [{"season": 1, "episode": 1}, {"season": 1, "episode": 2}]},
            {"source": "a/c.nfo", "destination": "x.nfo", "size": 1}
        ]);
        let files = files_of_items(&items);
        assert_eq!(files.len(), 2);
        assert_eq!(files[1], (1, 2, "Show (2024)/Season 01/Show - S01E01E02.mkv".to_string()));
    }
}
