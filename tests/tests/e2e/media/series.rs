//! A series wanted by episode, over the API against a mock TMDB, on both
//! backends: wanting seasons records their episodes from TMDB's season
//! endpoint (titles, air dates, absolute numbers), the library shows each
//! season's progress (have / missing / not aired), episodes are monitored
//! or not one by one, bad changes are refused and change nothing, and
//! giving a season up unmonitors its episodes.

use capstan_tests::api::{Api, serve};
use capstan_tests::both_backends;
use capstan_tests::db::Backend;
use capstan_tests::mock_tmdb::{Catalog, Series};
use reqwest::Method;
use serde_json::{Value, json};

use super::titles::env_with;

/// A running series: one episode aired, one due in the far future, one
/// without a date yet.
fn running_series() -> Series {
    Series {
        id: 777001,
        name: "The Long Watch",
        original_name: "The Long Watch",
        first_air_date: "2025-01-05",
        last_air_date: "2025-01-05",
        seasons: &[(1, 3)],
        episodes: &[(1, 1, "Pilot", "2025-01-05"), (1, 2, "Later", "2999-01-01"), (1, 3, "Someday", "")],
        genres: &["Drama"],
        imdb_id: "tt0000001",
        tvdb_id: 1,
        popularity: 1.0,
    }
}

/// The library's line for season `season` of entity `id`.
async fn season_progress(admin: &Api, id: &str, season: i64) -> Value {
    let (status, library) = admin.send(Method::GET, "/library?kind=tv", Value::Null).await;
    assert_eq!(status, 200, "{library}");
    let item = library["items"].as_array().unwrap().iter().find(|i| i["entity"]["id"] == id).unwrap().clone();
    item["slots"].as_array().unwrap().iter().find(|s| s["season"] == season).unwrap().clone()
}

async fn a_series_is_wanted_by_episode(backend: Backend) {
    let mut catalog = Catalog::sample();
    catalog.series.push(running_series());
    let env = env_with(backend, catalog).await;
    let base = serve(env.app.clone()).await;
    let admin = Api::new(&base).signed_in(&env.db, "admin").await;

    // Wanting season 1 reads its episodes from TMDB; the specials are not asked for.
    let (status, added) =
        admin.send(Method::POST, "/library/titles", json!({"tmdbId": 126308, "kind": "tv", "quality": "1080p"})).await;
    assert_eq!(status, 201, "{added}");
    let id = added["entity"]["id"].as_str().unwrap().to_string();
    let asked: Vec<String> = env.tmdb.received().into_iter().map(|r| r.path).collect();
    assert!(asked.contains(&"/3/tv/126308/season/1".to_string()), "{asked:?}");
    assert!(!asked.contains(&"/3/tv/126308/season/0".to_string()), "{asked:?}");

    let (status, listed) = admin.send(Method::GET, &format!("/library/titles/{id}/episodes"), Value::Null).await;
    assert_eq!(status, 200, "{listed}");
    let episodes = listed["episodes"].as_array().unwrap();
    assert_eq!(episodes.len(), 10, "{listed}");
    assert_eq!(
        (episodes[1]["season"].as_i64(), episodes[1]["episode"].as_i64(), episodes[1]["title"].as_str()),
        (Some(1), Some(2), Some("Servants of Two Masters"))
    );
    assert_eq!(episodes[9]["absolute"], 10);
    assert_eq!(episodes[2]["airDate"], "2024-03-05");
    assert!(episodes.iter().all(|e| e["monitored"] == true && e["state"] == "missing"), "{listed}");
    let slot = season_progress(&admin, &id, 1).await;
    assert_eq!(slot["episodes"], json!({"total": 10, "have": 0, "missing": 10, "notAired": 0, "unmonitored": 0}));

    // Two episodes are not wanted after all.
    let path = format!("/library/titles/{id}/seasons/1/episodes");
    let (status, changed) = admin.send(Method::PUT, &path, json!({"monitored": false, "episodes": [9, 10]})).await;
    assert_eq!(status, 200, "{changed}");
    let states: Vec<&str> =
        changed["episodes"].as_array().unwrap().iter().map(|e| e["state"].as_str().unwrap()).collect();
    assert_eq!(&states[7..], ["missing", "unmonitored", "unmonitored"]);
    let slot = season_progress(&admin, &id, 1).await;
    assert_eq!(slot["episodes"], json!({"total": 10, "have": 0, "missing": 8, "notAired": 0, "unmonitored": 2}));
    assert_eq!(slot["status"], "wanted");

    // Changes that do not fit are refused and change nothing.
    for (path, body, expected) in [
        (path.clone(), json!({"monitored": true, "episodes": [11]}), 404),
        (format!("/library/titles/{id}/seasons/2/episodes"), json!({"monitored": true}), 404),
        ("/library/titles/no-such-title/seasons/1/episodes".to_string(), json!({"monitored": true}), 404),
        (path.clone(), json!({"monitored": "yes"}), 422),
        (path.clone(), json!({"monitored": true, "episodes": []}), 422),
        (path.clone(), json!({"monitored": true, "season": 1}), 422),
    ] {
        let (status, answer) = admin.send(Method::PUT, &path, body.clone()).await;
        assert_eq!(status, expected, "{path} {body}: {answer}");
    }
    let slot = season_progress(&admin, &id, 1).await;
    assert_eq!(slot["episodes"]["unmonitored"], 2, "nothing changed: {slot}");

    // A running series: what has not aired is not missing.
    let (status, running) =
        admin.send(Method::POST, "/library/titles", json!({"tmdbId": 777001, "kind": "tv", "quality": "1080p"})).await;
    assert_eq!(status, 201, "{running}");
    let running_id = running["entity"]["id"].as_str().unwrap().to_string();
    let slot = season_progress(&admin, &running_id, 1).await;
    assert_eq!(slot["episodes"], json!({"total": 3, "have": 0, "missing": 1, "notAired": 2, "unmonitored": 0}));

    // Giving the season up unmonitors its episodes.
    let (status, removed) = admin.send(Method::DELETE, &format!("/library/titles/{id}?season=1"), Value::Null).await;
    assert_eq!(status, 200, "{removed}");
    let (_, listed) = admin.send(Method::GET, &format!("/library/titles/{id}/episodes"), Value::Null).await;
    assert!(listed["episodes"].as_array().unwrap().iter().all(|e| e["state"] == "unmonitored"), "{listed}");
    let (status, _) = admin.send(Method::GET, "/library/titles/no-such-title/episodes", Value::Null).await;
    assert_eq!(status, 404);
}

both_backends!(a_series_is_wanted_by_episode);
