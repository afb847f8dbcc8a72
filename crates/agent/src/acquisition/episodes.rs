//! What a season slot still lacks, episode by episode, and which releases
//! give it: a season pack gives every missing episode it holds, an episode
//! release those of its episodes that are missing (an anime release's
//! absolute numbers read through the series' episodes). The sweep searches for
//! the one episode when only one is missing, and otherwise for the season;
//! among the releases that fit it keeps those that give the most, and on a
//! tie the ones that are not whole seasons (no need to fetch ten episodes
//! for one).

use serde_json::Value;

use crate::domain::{Episode, EpisodeState};

/// The episodes of `season` that are monitored, have aired and have no
/// file, in order; `None` when no episode of the season is recorded (a
/// series wanted before episodes were: the season is fetched whole).
pub(super) fn missing(episodes: &[Episode], season: i64) -> Option<Vec<i64>> {
    let of_season: Vec<&Episode> = episodes.iter().filter(|e| e.season == season).collect();
    if of_season.is_empty() {
        return None;
    }
    Some(of_season.iter().filter(|e| e.state == EpisodeState::Missing).map(|e| e.episode).collect())
}

/// The episode numbers a release's name lists (`S01E02E03` → 2, 3); empty
/// for a season pack.
fn listed(parsed: &Value) -> Vec<i64> {
    parsed["episodes"].as_array().into_iter().flatten().filter_map(Value::as_i64).collect()
}

/// What a release holds of a season.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Holds {
    /// The whole season (a pack).
    Season,
    /// These episodes of it.
    Episodes(Vec<i64>),
}

/// What a release holds of `season`, from its parsed name: a pack of it,
/// some of its episodes, or nothing of it (`None`). A name with episodes
/// and no season numbers them over the whole series, as anime releases
/// do: the series' recorded absolute numbers say which season they are in.
pub(super) fn holds(parsed: &Value, season: i64, episodes: &[Episode]) -> Option<Holds> {
    let listed = listed(parsed);
    match capstan_quality::covers_season(parsed, season) {
        Some(true) if listed.is_empty() => Some(Holds::Season),
        Some(true) => Some(Holds::Episodes(listed)),
        Some(false) => None,
        None => {
            let mapped: Vec<i64> = episodes
                .iter()
                .filter(|e| e.season == season && e.absolute.is_some_and(|a| listed.contains(&a)))
                .map(|e| e.episode)
                .collect();
            (!mapped.is_empty()).then_some(Holds::Episodes(mapped))
        }
    }
}

/// How many of the `missing` episodes a release gives, and whether it is a
/// whole season.
pub(super) fn gives(holds: &Holds, missing: &[i64]) -> (usize, bool) {
    match holds {
        Holds::Season => (missing.len(), true),
        Holds::Episodes(list) => (list.iter().filter(|e| missing.contains(e)).count(), false),
    }
}

/// The ranks of `candidates`' gifts to keep: the most episodes given, and
/// among equals the releases that are not whole seasons. Answers the
/// indexes kept; none when no candidate gives anything.
pub(super) fn best(gifts: &[(usize, bool)]) -> Vec<usize> {
    let rank = |(given, pack): (usize, bool)| (given, !pack);
    let Some(top) = gifts.iter().copied().filter(|(given, _)| *given > 0).map(rank).max() else {
        return Vec::new();
    };
    (0..gifts.len()).filter(|i| rank(gifts[*i]) == top).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn episode(season: i64, episode: i64, state: EpisodeState) -> Episode {
        Episode {
            entity_id: "e".into(),
            season,
            episode,
            absolute: None,
            title: None,
            air_date: None,
            monitored: state != EpisodeState::Unmonitored,
            file: None,
            file_release_id: None,
            state,
        }
    }

    #[test]
    fn only_monitored_aired_episodes_without_a_file_are_missing() {
        let list = [
            episode(1, 1, EpisodeState::Have),
            episode(1, 2, EpisodeState::Missing),
            episode(1, 3, EpisodeState::NotAired),
            episode(1, 4, EpisodeState::Unmonitored),
            episode(2, 1, EpisodeState::Missing),
        ];
        assert_eq!(missing(&list, 1), Some(vec![2]));
        assert_eq!(missing(&list, 3), None, "a season without recorded episodes is fetched whole");
    }

    #[test]
    fn an_anime_number_is_read_through_the_absolute_numbers() {
        let mut list = vec![episode(1, 12, EpisodeState::Have), episode(2, 1, EpisodeState::Missing)];
        list[0].absolute = Some(12);
        list[1].absolute = Some(13);
        let anime = json!({"episodes": [13]});
        assert_eq!(holds(&anime, 2, &list), Some(Holds::Episodes(vec![1])));
        assert_eq!(holds(&anime, 1, &list), None);
        assert_eq!(holds(&json!({"season": 2}), 2, &list), Some(Holds::Season));
        assert_eq!(holds(&json!({"season": 1, "episodes": [3]}), 2, &list), None);
    }

    #[test]
    fn a_pack_gives_everything_missing_and_a_single_episode_wins_a_tie() {
        let holds = |parsed: Value| holds(&parsed, 1, &[]).unwrap();
        let pack = holds(json!({"season": 1}));
        let two = holds(json!({"season": 1, "episodes": [2]}));
        let had = holds(json!({"season": 1, "episodes": [1]}));
        assert_eq!(gives(&pack, &[2]), (1, true));
        assert_eq!(gives(&two, &[2]), (1, false));
        assert_eq!(gives(&had, &[2]), (0, false));
        // One episode missing: the episode, not the season.
        assert_eq!(best(&[gives(&pack, &[2]), gives(&two, &[2]), gives(&had, &[2])]), vec![1]);
        // Several missing: the pack gives more.
        assert_eq!(best(&[gives(&pack, &[2, 3]), gives(&two, &[2, 3])]), vec![0]);
        assert!(best(&[gives(&had, &[2])]).is_empty());
    }
}
