//! Native tests through the SDK's mock host: real-shaped TMDB bodies in,
//! the JSON a caller would see out, and each failure TMDB can answer.

use capstan_sdk::host::{Request, Response};
use capstan_sdk::testing::{Called, MockHost, descriptor, invoke};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::CatalogLookup;

fn ok(body: Value) -> Result<Response, HostError> {
    Ok(Response {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
    })
}

fn status(code: u16, body: &str, headers: &[(&str, &str)]) -> Result<Response, HostError> {
    Ok(Response {
        status: code,
        headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        body: body.as_bytes().to_vec(),
    })
}

fn tmdb(handler: impl FnMut(&Request) -> Result<Response, HostError> + 'static) {
    MockHost::new("catalog.lookup").with_service("tmdb", handler).install();
}

fn call(input: Value) -> Result<Value, Failure> {
    match invoke::<CatalogLookup>(input)? {
        Called::Succeeded(v) => Ok(v),
        Called::Pending(v) => panic!("a lookup is never pending: {v}"),
    }
}

fn query_of(req: &Request, name: &str) -> Option<String> {
    req.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

fn dune_movies() -> Value {
    json!({"page": 1, "total_pages": 1, "total_results": 2, "results": [
        {"id": 438631, "title": "Dune", "original_title": "Dune", "release_date": "2021-09-15",
         "original_language": "en", "genre_ids": [878, 12], "popularity": 120.5, "poster_path": "/d5NXSklXo0qyIYkgV94XAgMIckC.jpg",
         "overview": "Paul Atreides, a brilliant and gifted young man..."},
        {"id": 841, "title": "Dune", "original_title": "Dune", "release_date": "", "original_language": "en",
         "genre_ids": [], "popularity": 30.1, "poster_path": null, "overview": ""}
    ]})
}

fn dune_tv() -> Value {
    json!({"page": 1, "total_pages": 1, "total_results": 1, "results": [
        {"id": 90228, "name": "Dune: Prophecy", "original_name": "Dune: Prophecy", "first_air_date": "2024-11-17",
         "origin_country": ["US"], "original_language": "en", "popularity": 80.0, "overview": "Ten thousand years..."}
    ]})
}

#[test]
fn search_both_merges_movies_and_series_by_popularity() {
    tmdb(|req| match req.path.as_str() {
        "/search/movie" => ok(dune_movies()),
        "/search/tv" => ok(dune_tv()),
        other => panic!("unexpected path {other}"),
    });
    let out = call(json!({"action": "search", "query": "  Dune ", "year": 2021})).unwrap();
    assert_eq!(out["action"], "search");
    assert_eq!(out["total_results"], 3);
    let titles: Vec<(&str, &str)> = out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["kind"].as_str().unwrap(), r["title"].as_str().unwrap()))
        .collect();
    assert_eq!(titles, [("movie", "Dune"), ("tv", "Dune: Prophecy"), ("movie", "Dune")]);
    let first = &out["results"][0];
    assert_eq!(first["tmdb_id"], 438631);
    assert_eq!(first["year"], 2021);
    assert!(first.get("original_title").is_none(), "an original title equal to the title is noise");
    let undated = &out["results"][2];
    assert!(undated.get("year").is_none() && undated.get("date").is_none(), "TMDB's empty date means unknown");
    assert_eq!(out["results"][1]["origin_country"], json!(["US"]));

    let sent = MockHost::take().unwrap().requests;
    assert_eq!(query_of(&sent[0], "query").as_deref(), Some("Dune"));
    assert_eq!(query_of(&sent[0], "year").as_deref(), Some("2021"));
    assert_eq!(query_of(&sent[1], "first_air_date_year").as_deref(), Some("2021"));
    assert!(sent.iter().all(|r| r.service == "tmdb" && r.method == "GET"));
}

#[test]
fn search_one_catalogue_sends_one_request_and_honours_the_limit() {
    tmdb(|_| ok(dune_movies()));
    let out =
        call(json!({"action": "search", "query": "Dune", "kind": "movie", "limit": 1, "language": "zh-CN"})).unwrap();
    assert_eq!(out["results"].as_array().unwrap().len(), 1);
    let sent = MockHost::take().unwrap().requests;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/search/movie");
    assert_eq!(query_of(&sent[0], "language").as_deref(), Some("zh-CN"));
}

#[test]
fn movie_details_carry_genres_runtime_and_imdb_id() {
    tmdb(|req| {
        assert_eq!(req.path, "/movie/693134");
        ok(json!({"id": 693134, "imdb_id": "tt15239678", "title": "Dune: Part Two", "original_title": "Dune: Part Two",
            "release_date": "2024-02-27", "runtime": 167, "status": "Released", "overview": "Follow the mythic journey...",
            "genres": [{"id": 878, "name": "Science Fiction"}, {"id": 12, "name": "Adventure"}],
            "belongs_to_collection": {"id": 726871, "name": "Dune Collection"}, "original_language": "en"}))
    });
    let out = call(json!({"action": "details", "kind": "movie", "tmdb_id": 693134})).unwrap();
    assert_eq!(out["action"], "details");
    assert_eq!(out["title"], "Dune: Part Two");
    assert_eq!(out["year"], 2024);
    assert_eq!(out["runtime_minutes"], 167);
    assert_eq!(out["genres"], json!(["Science Fiction", "Adventure"]));
    assert_eq!(out["imdb_id"], "tt15239678");
    assert_eq!(out["collection"], "Dune Collection");
    assert!(out.get("seasons").is_none());
}

#[test]
fn series_details_list_seasons_with_specials_and_the_next_episode() {
    tmdb(|_| {
        ok(json!({"id": 126308, "name": "Shōgun", "original_name": "SHOGUN", "first_air_date": "2024-02-27",
            "last_air_date": "2024-04-23", "number_of_seasons": 2, "number_of_episodes": 10, "episode_run_time": [59],
            "status": "Returning Series", "genres": [{"id": 18, "name": "Drama"}], "original_language": "en",
            "seasons": [
                {"season_number": 0, "name": "Specials", "episode_count": 1, "air_date": "2024-02-12"},
                {"season_number": 1, "name": "Season 1", "episode_count": 10, "air_date": "2024-02-27"},
                {"season_number": 2, "name": "Season 2", "episode_count": 0, "air_date": null}],
            "next_episode_to_air": {"season_number": 2, "episode_number": 1, "air_date": "2026-10-01", "name": "Episode 1"}}))
    });
    let out = call(json!({"action": "details", "kind": "tv", "tmdb_id": 126308})).unwrap();
    assert_eq!(out["kind"], "tv");
    assert_eq!(out["title"], "Shōgun");
    assert_eq!(out["original_title"], "SHOGUN");
    assert_eq!(out["runtime_minutes"], 59);
    assert_eq!(out["number_of_seasons"], 2);
    let seasons = out["seasons"].as_array().unwrap();
    assert_eq!(seasons.len(), 3);
    assert_eq!(seasons[0]["season_number"], 0);
    assert_eq!(seasons[1]["episode_count"], 10);
    assert_eq!(out["next_episode"]["season_number"], 2);
}

#[test]
fn external_ids_give_imdb_and_tvdb() {
    tmdb(|req| {
        assert_eq!(req.path, "/tv/1399/external_ids");
        ok(json!({"id": 1399, "imdb_id": "tt0944947", "tvdb_id": 121361, "tvrage_id": 24493, "wikidata_id": "Q23572"}))
    });
    let out = call(json!({"action": "external-ids", "kind": "tv", "tmdb_id": 1399})).unwrap();
    assert_eq!(
        out,
        json!({"action": "external-ids", "kind": "tv", "tmdb_id": 1399, "imdb_id": "tt0944947", "tvdb_id": 121361})
    );
}

#[test]
fn an_unknown_id_is_not_found() {
    tmdb(|_| {
        status(
            404,
            r#"{"success":false,"status_code":34,"status_message":"The resource you requested could not be found."}"#,
            &[],
        )
    });
    let err = call(json!({"action": "details", "kind": "movie", "tmdb_id": 999999999})).unwrap_err();
    assert_eq!(err, Failure::NotFound("TMDB has no movie with TMDB id 999999999".into()));
}

#[test]
fn a_refused_key_says_the_credential_was_refused() {
    tmdb(|_| {
        status(
            401,
            r#"{"success":false,"status_code":7,"status_message":"Invalid API key: You must be granted a valid key."}"#,
            &[],
        )
    });
    let Err(Failure::Unavailable(message)) = call(json!({"action": "search", "query": "Dune"})) else { panic!() };
    assert!(message.contains("refused the configured credential"), "{message}");
    assert!(message.contains("Invalid API key"), "{message}");
}

#[test]
fn rate_limits_server_errors_and_bad_bodies_are_unavailable() {
    tmdb(|_| {
        status(
            429,
            r#"{"status_code":25,"status_message":"Your request count is over the allowed limit."}"#,
            &[("Retry-After", "3")],
        )
    });
    let Err(Failure::Unavailable(message)) = call(json!({"action": "search", "query": "Dune"})) else { panic!() };
    assert!(message.contains("rate-limited") && message.contains("retry after 3 s"), "{message}");

    tmdb(|_| status(503, "Service Unavailable", &[]));
    let Err(Failure::Unavailable(message)) = call(json!({"action": "external-ids", "kind": "movie", "tmdb_id": 1}))
    else {
        panic!()
    };
    assert!(message.contains("status 503"), "{message}");

    tmdb(|_| status(200, r#"{"id": 1, "title": "Broken"#, &[]));
    let Err(Failure::Unavailable(message)) = call(json!({"action": "details", "kind": "movie", "tmdb_id": 1})) else {
        panic!()
    };
    assert!(message.contains("not the expected JSON"), "{message}");
}

#[test]
fn an_unconfigured_service_is_unavailable_not_a_missing_title() {
    MockHost::new("catalog.lookup").install();
    let Err(Failure::Unavailable(message)) = call(json!({"action": "search", "query": "Dune"})) else { panic!() };
    assert!(message.contains("[services.tmdb]"), "{message}");
}

#[test]
fn bad_input_is_refused_before_any_request() {
    for input in [
        json!({"action": "search", "query": "   "}),
        json!({"action": "search", "query": "Dune", "year": 12}),
        json!({"action": "search", "query": "Dune", "limit": 50}),
        json!({"action": "search", "query": "Dune", "language": "chinese"}),
        json!({"action": "details", "kind": "movie", "tmdb_id": 0}),
        json!({"action": "details", "kind": "film", "tmdb_id": 5}),
        json!({"action": "details", "kind": "movie", "tmdb_id": 5, "colour": "red"}),
        json!({"action": "delete", "tmdb_id": 5}),
    ] {
        tmdb(|_| panic!("nothing may be sent for bad input"));
        let err = call(input.clone()).unwrap_err();
        assert!(matches!(err, Failure::InvalidInput(_)), "{input}: {err:?}");
    }
}

#[test]
fn the_descriptor_names_the_tmdb_service_and_chinese_aliases() {
    let d = descriptor::<CatalogLookup>();
    assert_eq!(d.id, "catalog.lookup");
    assert_eq!(d.services, ["tmdb"]);
    assert!(d.aliases.iter().any(|a| a == "搜索电影"));
    let schema: Value = serde_json::from_str(&d.input_schema).unwrap();
    assert!(schema.to_string().contains("external-ids"), "{schema}");
}
