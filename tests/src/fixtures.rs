//! Records the suites share: the movie most of them acquire.

use capstan::domain::NewEntity;

/// Dune: Part Two (2024), TMDB 693134.
pub fn dune_part_two() -> NewEntity {
    NewEntity {
        kind: capstan::domain::EntityKind::Movie,
        tmdb_id: Some(693134),
        title: "Dune: Part Two".into(),
        original_title: None,
        year: Some(2024),
        seasons: vec![],
        episodes: Vec::new(),
    }
}
