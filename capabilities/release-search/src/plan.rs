//! Choosing what to ask one indexer: the typed `movie`/`tvsearch` function
//! with ids, season and episode when its caps list them, otherwise the
//! basic `search` with a text query. Sending a parameter an indexer does
//! not support makes some indexers fail and others ignore it and return
//! everything, so only listed parameters are ever sent.

use crate::input::{Kind, SearchInput};
use crate::torznab::caps::{Caps, SearchMode};

/// The request for one indexer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchPlan {
    /// `movie`, `tvsearch` or `search`.
    pub function: &'static str,
    /// Query parameters besides `t`, in the order sent.
    pub params: Vec<(&'static str, String)>,
}

impl SearchPlan {
    /// The full parameter list, `t` first.
    pub fn query(&self) -> Vec<(&'static str, String)> {
        let mut all = vec![("t", self.function.to_string())];
        all.extend(self.params.iter().cloned());
        all
    }

    /// Names of the parameters that narrow the search (for the report).
    pub fn narrowed_by(&self) -> Vec<String> {
        self.params.iter().map(|(k, _)| *k).filter(|k| !matches!(*k, "cat" | "extended")).map(String::from).collect()
    }
}

/// ` S01E02`, ` S01` or nothing: how a text search says season and episode.
fn episode_suffix(input: &SearchInput) -> String {
    match (input.season, input.episode) {
        (Some(s), Some(e)) => format!(" S{s:02}E{e:02}"),
        (Some(s), None) => format!(" S{s:02}"),
        _ => String::new(),
    }
}

fn finish(function: &'static str, mut params: Vec<(&'static str, String)>, input: &SearchInput) -> SearchPlan {
    let categories = input.categories();
    if !categories.is_empty() {
        params.push(("cat", categories.iter().map(u32::to_string).collect::<Vec<_>>().join(",")));
    }
    // Without it some indexers leave out seeders, peers and the infohash.
    params.push(("extended", "1".into()));
    SearchPlan { function, params }
}

/// The typed function's request, or `None` when it cannot express this
/// search (not offered, or neither an id nor a query it accepts).
fn typed(function: &'static str, mode: &SearchMode, input: &SearchInput) -> Option<SearchPlan> {
    if !mode.available {
        return None;
    }
    let ids: [(&'static str, Option<String>); 3] = [
        ("imdbid", input.imdb_digits().map(str::to_string)),
        ("tmdbid", input.tmdb_id.map(|id| id.to_string())),
        ("tvdbid", input.tvdb_id.filter(|_| function == "tvsearch").map(|id| id.to_string())),
    ];
    let id_params: Vec<(&'static str, String)> = ids
        .into_iter()
        .filter_map(|(name, value)| Some((name, value?)))
        .filter(|(name, _)| mode.supports(name))
        .collect();
    let season_ok = input.season.is_none() || mode.supports("season");
    // An id is exact, and adding the title would drop releases named in
    // another language, so the query is sent only without a usable id, or
    // to carry a season the function cannot take as a parameter.
    let use_ids = !id_params.is_empty() && (season_ok || input.query().is_none());
    let mut params = if use_ids {
        id_params
    } else {
        let query = input.query()?;
        if !mode.supports("q") {
            return None;
        }
        let suffix = if season_ok { String::new() } else { episode_suffix(input) };
        vec![("q", format!("{query}{suffix}"))]
    };
    if season_ok {
        if let Some(season) = input.season {
            params.push(("season", season.to_string()));
        }
        if let Some(episode) = input.episode
            && mode.supports("ep")
        {
            params.push(("ep", episode.to_string()));
        }
    }
    Some(finish(function, params, input))
}

/// Plans the search for an indexer with `caps`, or says why it cannot be
/// searched for this input.
pub fn plan(caps: &Caps, input: &SearchInput) -> Result<SearchPlan, String> {
    if input.recent {
        // The feed: the basic function with nothing narrowing it.
        if !caps.search.available {
            return Err("offers no search function to read its newest releases from".into());
        }
        return Ok(finish("search", Vec::new(), input));
    }
    let kind = input.effective_kind();
    let typed_plan = match kind {
        Kind::Movie => typed("movie", &caps.movie_search, input),
        Kind::Tv => typed("tvsearch", &caps.tv_search, input),
        Kind::Any => None,
    };
    if let Some(plan) = typed_plan {
        return Ok(plan);
    }
    let Some(query) = input.query() else {
        return Err("supports neither these ids in its caps nor a search without a query".into());
    };
    if !caps.search.available {
        return Err("offers no search function that fits this search".into());
    }
    let suffix = if kind == Kind::Tv { episode_suffix(input) } else { String::new() };
    Ok(finish("search", vec![("q", format!("{query}{suffix}"))], input))
}
