//! Native tests through the SDK's mock host: the entity recorded is what
//! TMDB says, the transition named is the one the action means, and TMDB's
//! or the store's refusals reach the caller as they are.

use std::cell::RefCell;
use std::rc::Rc;

use capstan_sdk::host::{Request, Response};
use capstan_sdk::testing::{Called, MockHost, descriptor, invoke};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::LibraryWant;

fn tmdb(req: &Request) -> Result<Response, HostError> {
    let (status, body) = match req.path.as_str() {
        "/movie/693134" => (
            200,
            json!({"id": 693134, "title": "Dune: Part Two", "release_date": "2024-02-27", "poster_path": "/p.jpg"}),
        ),
        "/tv/1399" => (
            200,
            json!({"id": 1399, "name": "Game of Thrones", "first_air_date": "2011-04-17",
            "seasons": [{"season_number": 0, "episode_count": 3}, {"season_number": 1, "episode_count": 10}, {"season_number": 2, "episode_count": 10}]}),
        ),
        _ => (
            404,
            json!({"success": false, "status_code": 34, "status_message": "The resource you requested could not be found."}),
        ),
    };
    Ok(Response { status, headers: vec![], body: body.to_string().into_bytes() })
}

/// Installs the mock; returns what the store was asked.
fn install() -> Rc<RefCell<Vec<(String, Value)>>> {
    let asked = Rc::new(RefCell::new(Vec::new()));
    let seen = asked.clone();
    MockHost::new("library.want")
        .with_service("tmdb", tmdb)
        .with_domain(move |iface, name, arg| {
            assert_eq!(iface, "records");
            seen.borrow_mut().push((name.to_string(), arg.clone()));
            if arg["entityId"] == "taken" {
                return Err(HostError::Conflict("Dune: Part Two (2024) is already wanted".into()));
            }
            Ok(json!({"entity": arg.get("entity").cloned().unwrap_or(json!({"id": arg["entityId"]})), "slots": [{"id": "s1"}]}))
        })
        .install();
    asked
}

fn call(input: Value) -> Result<Value, Failure> {
    match invoke::<LibraryWant>(input)? {
        Called::Succeeded(v) | Called::Pending(v) => Ok(v),
    }
}

#[test]
fn adding_records_the_catalogues_entity_and_the_seasons_asked_for() {
    let asked = install();
    call(json!({"action": "add", "tmdbId": 693134, "kind": "movie", "quality": "2160p", "profile": "quality.movies"}))
        .unwrap();
    let (name, arg) = asked.borrow()[0].clone();
    assert_eq!(name, "title.want");
    assert_eq!(arg["entity"]["title"], "Dune: Part Two");
    assert_eq!(arg["entity"]["year"], 2024);
    assert_eq!((arg["quality"].as_str(), arg["profile"].as_str()), (Some("2160p"), Some("quality.movies")));

    call(json!({"action": "add", "tmdbId": 1399, "kind": "tv", "quality": "1080p", "seasons": [2]})).unwrap();
    let (_, arg) = asked.borrow()[1].clone();
    assert_eq!(arg["entity"]["seasons"][2], json!({"number": 2, "episodeCount": 10}));
    assert_eq!(arg["seasons"], json!([2]));
}

#[test]
fn an_unknown_title_a_conflict_and_bad_input_are_clear() {
    install();
    assert!(matches!(
        call(json!({"action": "add", "tmdbId": 1, "kind": "movie", "quality": "1080p"})),
        Err(Failure::NotFound(_))
    ));
    assert!(matches!(call(json!({"action": "remove", "entityId": "taken"})), Err(Failure::Conflict(_))));
    assert!(matches!(
        call(json!({"action": "add", "tmdbId": 0, "kind": "movie", "quality": "1080p"})),
        Err(Failure::InvalidInput(_))
    ));
    assert!(matches!(
        call(json!({"action": "add", "tmdbId": 5, "kind": "movie", "quality": " "})),
        Err(Failure::InvalidInput(_))
    ));
    assert!(matches!(call(json!({"action": "buy", "tmdbId": 5})), Err(Failure::InvalidInput(_))));
}

#[test]
fn change_and_remove_name_their_transitions_and_an_empty_profile_clears_it() {
    let asked = install();
    call(json!({"action": "change", "entityId": "e1", "profile": ""})).unwrap();
    call(json!({"action": "remove", "entityId": "e1", "season": 3})).unwrap();
    let asked = asked.borrow();
    assert_eq!(asked[0].0, "title.change");
    assert_eq!(asked[0].1["profile"], Value::Null);
    assert!(asked[0].1.as_object().unwrap().contains_key("profile"));
    assert_eq!((asked[1].0.as_str(), asked[1].1["season"].as_u64()), ("title.unwant", Some(3)));
}

#[test]
fn the_descriptor_is_execute_and_declares_tmdb() {
    let d = descriptor::<LibraryWant>();
    assert_eq!(d.id, "library.want");
    assert!(matches!(d.label, capstan_sdk::bindings::capstan::capability::types::Label::Execute));
    assert_eq!(d.services, ["tmdb"]);
}
