//! Items of an organization plan: each media file of the download with its
//! destination under the library root, named by the movie or episode
//! template. `organize.plan` drafts these items; `organize.execute`
//! recomputes the file side of them to see whether the download changed.
//! Where the slot already holds a file for what an item brings (an
//! upgrade), the item names it as replaced: a movie's file by its largest
//! item, an episode file by the item holding its first episode, and only
//! when the download brings every episode that file holds (a double
//! episode is not given up for half of it).

use capstan_sdk::Failure;

use crate::content::MediaFile;
use crate::episodes;
use crate::naming::{Template, Values};
use crate::subject::{Kind, Subject};
use crate::{EpisodeRef, Item};

/// The two templates, parsed.
#[derive(Debug, Clone)]
pub struct Templates {
    pub movie: Template,
    pub episode: Template,
}

fn base_values(subject: &Subject) -> Values {
    Values {
        title: subject.title.clone(),
        original_title: subject.original_title.clone(),
        year: subject.year,
        season: subject.season,
        episodes: Vec::new(),
        episode_title: None,
        quality_full: subject.quality_full.clone(),
        release_group: subject.release_group.clone(),
    }
}

/// The plan's items for `media` (the download's media files), sorted by
/// source. Two files landing on one destination is a `conflict`.
pub fn items(subject: &Subject, media: &[MediaFile], templates: &Templates) -> Result<Vec<Item>, Failure> {
    let mut items = match subject.kind {
        Kind::Movie => movie_items(subject, media, &templates.movie)?,
        Kind::Tv => episode_items(subject, media, &templates.episode)?,
    };
    replacing(subject, &mut items);
    items.sort();
    let mut seen = std::collections::BTreeMap::new();
    for item in &items {
        if let Some(other) = seen.insert(item.destination.clone(), item.source.clone()) {
            return Err(Failure::Conflict(format!(
                "{other} and {} would both become {}; change the template or remove one",
                item.source, item.destination
            )));
        }
    }
    Ok(items)
}

/// Names on `items` the files the slot holds that they replace.
fn replacing(subject: &Subject, items: &mut [Item]) {
    match subject.kind {
        Kind::Movie => {
            if let (Some(old), Some(main)) = (&subject.held_movie, items.iter_mut().max_by_key(|i| i.size)) {
                main.replaces.push(old.clone());
            }
        }
        Kind::Tv => {
            let brought: Vec<EpisodeRef> = items.iter().flat_map(|i| i.episodes.iter().copied()).collect();
            let mut named: Vec<String> = Vec::new();
            for item in items.iter_mut() {
                for e in item.episodes.clone() {
                    let Some(old) = subject.held_episodes.get(&(e.season, e.episode)) else { continue };
                    let whole =
                        subject.held_episodes.iter().filter(|(_, file)| *file == old).all(|((season, episode), _)| {
                            brought.contains(&EpisodeRef { season: *season, episode: *episode })
                        });
                    if whole && !named.contains(old) {
                        named.push(old.clone());
                        item.replaces.push(old.clone());
                    }
                }
            }
        }
    }
}

fn movie_items(subject: &Subject, media: &[MediaFile], template: &Template) -> Result<Vec<Item>, Failure> {
    if template.uses_numbers() {
        return Err(Failure::InvalidInput(
            "movie_template uses {season} or {episode}, which a movie does not have".into(),
        ));
    }
    let values = base_values(subject);
    media
        .iter()
        .enumerate()
        .map(|(i, file)| {
            let mut destination = template.render(&values, "")?;
            // A movie split over several files keeps them apart and in
            // order the way media servers read stacked parts.
            if media.len() > 1 {
                destination.push_str(&format!(" - pt{}", i + 1));
            }
            destination.push('.');
            destination.push_str(&file.extension());
            Ok(Item {
                source: file.path.clone(),
                destination,
                size: file.size,
                episodes: Vec::new(),
                replaces: Vec::new(),
            })
        })
        .collect()
}

fn episode_items(subject: &Subject, media: &[MediaFile], template: &Template) -> Result<Vec<Item>, Failure> {
    if !template.uses_episode() {
        return Err(Failure::InvalidInput(
            "episode_template must contain {episode}, or every episode would get the same name".into(),
        ));
    }
    media
        .iter()
        .map(|file| {
            let mut values = base_values(subject);
            let Some((season, found)) = which_episodes(subject, file.name(), media.len() == 1) else {
                return Err(Failure::Conflict(format!(
                    "cannot tell which episode {} is: its name has no SxxEyy marker or episode number the series has",
                    file.path
                )));
            };
            values.season = Some(season);
            values.episodes = found;
            let season = values.season.unwrap_or_default();
            values.episode_title = subject.episode_title(season, &values.episodes);
            let destination = template.render(&values, &file.extension())?;
            let episodes = values.episodes.iter().map(|&episode| EpisodeRef { season, episode }).collect();
            Ok(Item { source: file.path.clone(), destination, size: file.size, episodes, replaces: Vec::new() })
        })
        .collect()
}

/// The season and episodes a file of the download holds: its `SxxEyy`
/// marker; else its anime-style number, over the whole series; else, for
/// the download's only file, what the release name says (mapped the same
/// way when the release numbers episodes absolutely and the series'
/// episodes are known).
fn which_episodes(subject: &Subject, name: &str, lone: bool) -> Option<(u32, Vec<u32>)> {
    if let Some(found) = episodes::parse(name) {
        return Some((found.season, found.episodes));
    }
    if let Some(found) = episodes::parse_absolute(name).and_then(|n| subject.from_absolute(&[n])) {
        return Some(found);
    }
    if !lone || subject.release_episodes.is_empty() {
        return None;
    }
    if subject.release_is_absolute
        && let Some(found) = subject.from_absolute(&subject.release_episodes)
    {
        return Some(found);
    }
    // Read within the plan's season, as before the series' episodes were known.
    Some((subject.season?, subject.release_episodes.clone()))
}
