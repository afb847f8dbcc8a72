//! Capability `library.want` (label execute): what the library wants.
//! `add` reads the title's details from TMDB itself (so the entity the
//! library records is the catalogue's, not what a caller typed) and opens
//! a slot per movie or season through the `records` transition
//! `title.want`; `change` moves the wanted slots to another quality or
//! profile; `remove` stops wanting a title or one season; `monitor` says
//! which episodes of a wanted season the library wants. A series' episodes
//! (numbers, titles, air dates) are read from TMDB's season endpoint for
//! the seasons wanted and recorded with the entity. Wanting is
//! execute: the background sweep fetches wanted titles under a standing
//! grant, so an automated caller needs a grant or an approval to want one.

#[cfg(test)]
mod tests;

use capstan_sdk::contract::ops::ById;
use capstan_sdk::contract::ops::drafts::{NewEntity, NewEpisode};
use capstan_sdk::contract::ops::queries::{EntityGet, SlotsForEntity};
use capstan_sdk::contract::ops::transitions::{
    EpisodesMonitor, EpisodesMonitorRecord, TitleChange, TitleChangeRecord, TitleUnwant, TitleUnwantRecord,
    TitleWantRecord, WantTitle, WantedTitle,
};
use capstan_sdk::contract::status::EntityKind;
use capstan_sdk::host::domain;
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use capstan_tmdb::MediaKind;
use capstan_tmdb::output::{Details, LookupOutput};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What to do.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(tag = "action", rename_all = "kebab-case", deny_unknown_fields)]
pub enum WantInput {
    /// Wants a movie, or a series' seasons, at a quality.
    #[serde(rename_all = "camelCase")]
    Add {
        /// The TMDB id, as `catalog.lookup` returns it.
        tmdb_id: u64,
        /// `movie` or `tv`.
        kind: MediaKind,
        /// The resolution to fetch: `2160p`, `1080p`, `720p`, ...
        quality: String,
        /// A `quality.*` policy that judges releases (sizes, sources,
        /// codecs); without one, the most seeded release at the quality.
        #[serde(default)]
        profile: Option<String>,
        /// For a series: the seasons to want; default every season after
        /// the specials.
        #[serde(default)]
        seasons: Option<Vec<u32>>,
    },
    /// Moves a wanted title to another quality and/or profile.
    #[serde(rename_all = "camelCase")]
    Change {
        /// The library entity id.
        entity_id: String,
        #[serde(default)]
        quality: Option<String>,
        /// A new `quality.*` policy; an empty text clears it.
        #[serde(default)]
        profile: Option<String>,
    },
    /// Wants (or stops wanting) episodes of a wanted season: the whole
    /// season, or only the episodes named.
    #[serde(rename_all = "camelCase")]
    Monitor {
        /// The library entity id.
        entity_id: String,
        season: u32,
        /// The episode numbers; default every episode of the season.
        #[serde(default)]
        episodes: Option<Vec<u32>>,
        /// `true` to want them, `false` to stop.
        monitored: bool,
    },
    /// Stops wanting a title, or one season of a series.
    #[serde(rename_all = "camelCase")]
    Remove {
        /// The library entity id.
        entity_id: String,
        #[serde(default)]
        season: Option<u32>,
    },
}

/// What the library wants of the title now.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct WantOutput {
    /// The entity (`id`, `kind`, `tmdbId`, `title`, `year`, `seasons`).
    pub entity: Value,
    /// The slots added, or the title's slots after a change.
    pub slots: Vec<Value>,
    /// After `monitor`: the season's episodes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub episodes: Vec<Value>,
}

/// The seasons an `add` wants: those picked, else every regular season.
fn wanted_seasons(details: &Details, picked: Option<&[u32]>) -> Vec<u32> {
    match picked {
        Some(p) => p.to_vec(),
        None => details.seasons.iter().map(|s| s.season_number).filter(|n| *n >= 1).collect(),
    }
}

/// The episodes of `seasons` of series `tmdb_id`, from TMDB's season
/// endpoint. A season TMDB does not list is left to the host to refuse.
fn episodes_of(details: &Details, seasons: &[u32]) -> Result<Vec<NewEpisode>, Failure> {
    let mut episodes = Vec::new();
    for &season in seasons {
        if !details.seasons.iter().any(|s| s.season_number == season) {
            continue;
        }
        let listed = capstan_tmdb::catalog::season(details.tmdb_id, season, None)?;
        episodes.extend(listed.episodes.into_iter().map(|e| NewEpisode {
            season: i64::from(season),
            episode: i64::from(e.episode_number),
            title: e.name,
            air_date: e.air_date,
        }));
    }
    Ok(episodes)
}

/// The entity the library records, from TMDB's details.
fn entity_of(details: &Details) -> Result<NewEntity, Failure> {
    let tmdb_id = i64::try_from(details.tmdb_id)
        .map_err(|_| Failure::InvalidInput(format!("TMDB id {} is out of range", details.tmdb_id)))?;
    Ok(NewEntity {
        kind: match details.kind {
            MediaKind::Movie => EntityKind::Movie,
            MediaKind::Tv => EntityKind::Tv,
        },
        tmdb_id: Some(tmdb_id),
        title: details.title.clone(),
        original_title: details.original_title.clone(),
        year: details.year.map(i64::from),
        seasons: details
            .seasons
            .iter()
            .map(|s| json!({"number": s.season_number, "episodeCount": s.episode_count}))
            .collect(),
        episodes: Vec::new(),
    })
}

/// What the `title.*` transitions answer: the entity and its slots. The
/// contract leaves this answer JSON, so it is read here into its records.
fn answer(title: WantedTitle) -> Result<Outcome<WantOutput>, Failure> {
    let slots = title.slots.iter().map(|slot| json!(slot)).collect();
    Ok(Outcome::Succeeded(WantOutput { entity: json!(title.entity), slots, episodes: Vec::new() }))
}

fn non_empty(what: &str, v: &str) -> Result<(), Failure> {
    if v.trim().is_empty() {
        return Err(Failure::InvalidInput(format!("{what} must not be empty")));
    }
    Ok(())
}

/// The capability.
pub struct LibraryWant;

impl Capability for LibraryWant {
    type Input = WantInput;
    type Output = WantOutput;

    const META: Meta = Meta {
        id: "library.want",
        version: 1,
        label: Label::Execute,
        summary: "Want a movie or series at a quality, change what is wanted, or stop wanting it",
        description: "add: wants a movie, or seasons of a series, by TMDB id (from catalog.lookup) at a quality (2160p, 1080p, ...) and optionally a quality.* profile; the background sweep then searches the indexers and fetches it. A title already wanted, being fetched or in the library is a conflict; an unknown TMDB id is not-found. Wanting a series records its episodes (numbers, titles, air dates) for the seasons wanted. monitor: want or stop wanting episodes of a wanted season (the whole season, or the episode numbers given). change: another quality or profile for a wanted title. remove: stop wanting a title or one season (refused while a download for it is in progress).",
        tags: &["library", "want", "wanted", "watchlist", "movie", "tv"],
        aliases: &[
            "add movie",
            "add series",
            "add title",
            "want",
            "watchlist",
            "stop wanting",
            "添加电影",
            "添加剧集",
            "想看",
            "订阅",
        ],
        replay: Replay::Safe,
        services: &[capstan_tmdb::client::SERVICE],
    };

    fn invoke(input: WantInput) -> Result<Outcome<WantOutput>, Failure> {
        match input {
            WantInput::Add { tmdb_id, kind, quality, profile, seasons } => {
                if tmdb_id == 0 {
                    return Err(Failure::InvalidInput("tmdbId must be a positive TMDB id".into()));
                }
                non_empty("quality", &quality)?;
                let LookupOutput::Details(details) = capstan_tmdb::catalog::details(kind, tmdb_id, None)? else {
                    return Err(Failure::Internal("TMDB details came back as something else".into()));
                };
                let mut entity = entity_of(&details)?;
                if kind == MediaKind::Tv {
                    entity.episodes = episodes_of(&details, &wanted_seasons(&details, seasons.as_deref()))?;
                }
                let args = WantTitle {
                    entity,
                    quality,
                    profile,
                    seasons: seasons.map(|seasons| seasons.into_iter().map(i64::from).collect()),
                };
                answer(domain::call::<TitleWantRecord>(&args)?)
            }
            WantInput::Change { entity_id, quality, profile } => {
                non_empty("entityId", &entity_id)?;
                // An empty profile clears it (`null`); none leaves it be.
                let profile = profile.map(|p| (!p.trim().is_empty()).then_some(p));
                answer(domain::call::<TitleChangeRecord>(&TitleChange { entity_id, quality, profile })?)
            }
            WantInput::Monitor { entity_id, season, episodes, monitored } => {
                non_empty("entityId", &entity_id)?;
                let args = EpisodesMonitor {
                    entity_id: entity_id.clone(),
                    season: i64::from(season),
                    episodes: episodes.map(|list| list.into_iter().map(i64::from).collect()),
                    monitored,
                };
                let episodes = domain::call::<EpisodesMonitorRecord>(&args)?;
                let entity = domain::call::<EntityGet>(&ById::new(&entity_id))?;
                let slots = domain::call::<SlotsForEntity>(&ById::new(&entity_id))?;
                Ok(Outcome::Succeeded(WantOutput {
                    entity: json!(entity),
                    slots: slots.iter().map(|s| json!(s)).collect(),
                    episodes: episodes.iter().map(|e| json!(e)).collect(),
                }))
            }
            WantInput::Remove { entity_id, season } => {
                non_empty("entityId", &entity_id)?;
                let season = season.map(i64::from);
                answer(domain::call::<TitleUnwantRecord>(&TitleUnwant { entity_id, season })?)
            }
        }
    }
}

capstan_sdk::export_capability!(LibraryWant);
