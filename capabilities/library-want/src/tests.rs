//! Native tests through the SDK's mock host: the entity recorded is what
//! TMDB says, the transition named is the one the action means, and TMDB's
//! or the store's refusals reach the caller as they are.

use std::cell::RefCell;
use std::rc::Rc;

use capstan_sdk::contract::ops::transitions::{TitleChange, TitleUnwant, WantTitle};
use capstan_sdk::contract::records::{Entity, Slot};
use capstan_sdk::contract::status::SlotStatus;
use capstan_sdk::host::{Request, Response};
use capstan_sdk::testing::{Called, MockHost, descriptor, invoke, records};
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
        "/tv/1399/season/2" => (
            200,
            json!({"season_number": 2, "name": "Season 2", "air_date": "2012-04-01", "episodes": [
                {"episode_number": 1, "name": "The North Remembers", "air_date": "2012-04-01", "runtime": 53},
                {"episode_number": 2, "name": "The Night Lands", "air_date": "", "runtime": 0}]}),
        ),
        _ => (
            404,
            json!({"success": false, "status_code": 34, "status_message": "The resource you requested could not be found."}),
        ),
    };
    Ok(Response { status, headers: vec![], body: body.to_string().into_bytes() })
}

/// The entity the store answers for a transition's arguments: the one
/// recorded from `title.want`'s, or the one named.
fn entity_for(name: &str, arg: &Value) -> Entity {
    match name {
        "title.want" => {
            let WantTitle { entity, .. } = serde_json::from_value(arg.clone()).unwrap();
            Entity {
                kind: entity.kind,
                tmdb_id: entity.tmdb_id,
                title: entity.title,
                original_title: entity.original_title,
                year: entity.year,
                seasons: json!(entity.seasons),
                ..records::entity("e1")
            }
        }
        "title.change" => {
            let TitleChange { entity_id, .. } = serde_json::from_value(arg.clone()).unwrap();
            records::entity(&entity_id)
        }
        "title.unwant" => {
            let TitleUnwant { entity_id, .. } = serde_json::from_value(arg.clone()).unwrap();
            records::entity(&entity_id)
        }
        other => panic!("unexpected transition {other}"),
    }
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
            let entity = entity_for(name, arg);
            let slot = records::slot("s1", &entity.id);
            Ok(json!({"entity": entity, "slots": [slot]}))
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
    let out = call(
        json!({"action": "add", "tmdbId": 693134, "kind": "movie", "quality": "2160p", "profile": "quality.movies"}),
    )
    .unwrap();
    let (name, arg) = asked.borrow()[0].clone();
    assert_eq!(name, "title.want");
    let want: WantTitle = serde_json::from_value(arg).unwrap();
    assert_eq!((want.entity.kind.as_str(), want.entity.tmdb_id), ("movie", Some(693134)));
    assert_eq!(want.entity.title, "Dune: Part Two");
    assert_eq!(want.entity.year, Some(2024));
    assert_eq!((want.quality.as_str(), want.profile.as_deref()), ("2160p", Some("quality.movies")));
    assert_eq!(want.seasons, None);
    assert_eq!(out["entity"]["title"], "Dune: Part Two", "the entity the store recorded");
    let slot: Slot = serde_json::from_value(out["slots"][0].clone()).unwrap();
    assert_eq!((slot.id.as_str(), slot.status), ("s1", SlotStatus::Wanted), "the slots the store opened");

    call(json!({"action": "add", "tmdbId": 1399, "kind": "tv", "quality": "1080p", "seasons": [2]})).unwrap();
    let (_, arg) = asked.borrow()[1].clone();
    let want: WantTitle = serde_json::from_value(arg).unwrap();
    assert_eq!(want.entity.seasons[2], json!({"number": 2, "episodeCount": 10}));
    assert_eq!(want.seasons, Some(vec![2]));
    // The wanted season's episodes come from TMDB's season endpoint; a date
    // TMDB leaves empty is none.
    let episodes = &want.entity.episodes;
    assert_eq!(episodes.len(), 2, "{episodes:?}");
    assert_eq!((episodes[0].season, episodes[0].episode), (2, 1));
    assert_eq!(episodes[0].title.as_deref(), Some("The North Remembers"));
    assert_eq!((episodes[0].air_date.as_deref(), episodes[1].air_date.as_deref()), (Some("2012-04-01"), None));
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
    call(json!({"action": "change", "entityId": "e1", "quality": "720p"})).unwrap();
    call(json!({"action": "remove", "entityId": "e1", "season": 3})).unwrap();
    let asked = asked.borrow();
    assert_eq!(asked[0].0, "title.change");
    assert_eq!(asked[0].1["profile"], Value::Null);
    assert!(asked[0].1.as_object().unwrap().contains_key("profile"), "null clears, absent leaves: {}", asked[0].1);
    let change: TitleChange = serde_json::from_value(asked[0].1.clone()).unwrap();
    assert_eq!((change.quality, change.profile), (None, Some(None)));
    let change: TitleChange = serde_json::from_value(asked[1].1.clone()).unwrap();
    assert_eq!((change.quality.as_deref(), change.profile), (Some("720p"), None), "the profile is left as it is");
    assert_eq!(asked[2].0, "title.unwant");
    let unwant: TitleUnwant = serde_json::from_value(asked[2].1.clone()).unwrap();
    assert_eq!((unwant.entity_id.as_str(), unwant.season), ("e1", Some(3)));
}

#[test]
fn the_descriptor_is_execute_and_declares_tmdb() {
    let d = descriptor::<LibraryWant>();
    assert_eq!(d.id, "library.want");
    assert!(matches!(d.label, capstan_sdk::bindings::capstan::capability::types::Label::Execute));
    assert_eq!(d.services, ["tmdb"]);
}
