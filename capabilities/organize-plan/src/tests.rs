//! Native tests through the SDK's mock host: a download folder on disk and
//! a canned domain store in, the plan a user would be shown out.

use std::cell::RefCell;
use std::rc::Rc;

use capstan_sdk::contract::ops::drafts::{NewOrganizationPlan, OrganizationPlanned};
use capstan_sdk::contract::records::{Artifact, DownloadTask, Entity, SourceRelease};
use capstan_sdk::contract::status::{DownloadStatus, IdentityStatus, OrganizeMode};
use capstan_sdk::testing::{Called, Class, MockHost, descriptor, invoke, records};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::OrganizePlan;

/// What the mock's domain handler is.
type Handler = Box<dyn FnMut(&str, &str, &Value) -> Result<Value, HostError>>;
/// Every organization plan drafted, in order.
type Drafted = Rc<RefCell<Vec<Value>>>;

/// A domain store holding one download of `kind` with `status`; drafted
/// plans are recorded in the returned cell.
fn store(kind: &str, status: DownloadStatus, content: &str, parsed: Value) -> (Handler, Drafted) {
    store_holding(kind, status, content, parsed, &[])
}

/// [`store`], the library holding `held` (episode of season 2, file).
fn store_holding(
    kind: &str,
    status: DownloadStatus,
    content: &str,
    parsed: Value,
    held: &[(i64, &str)],
) -> (Handler, Drafted) {
    let held: Vec<(i64, String)> = held.iter().map(|(e, f)| (*e, f.to_string())).collect();
    let drafted = Rc::new(RefCell::new(Vec::new()));
    let seen = drafted.clone();
    let tv = kind == "tv";
    let download = DownloadTask {
        status,
        progress: 1.0,
        content_path: Some(content.to_string()),
        ..records::download("dl-1", "plan-1", "hash")
    };
    let payload = json!({
        "entityId": "ent-1", "season": if tv { json!(2) } else { Value::Null },
        "quality": "2160p", "sourceReleaseId": "rel-1", "title": "whatever"});
    let plan = records::plan("plan-1", payload);
    let entity = if tv {
        Entity {
            kind: capstan_sdk::contract::status::EntityKind::Tv,
            title: "Severance".into(),
            year: Some(2022),
            seasons: json!([{"number": 2, "episodeCount": 10}]),
            ..records::entity("ent-1")
        }
    } else {
        Entity { title: "Dune: Part Two".into(), year: Some(2024), ..records::entity("ent-1") }
    };
    let release = SourceRelease {
        parsed,
        entity_id: Some("ent-1".into()),
        identity_status: IdentityStatus::Resolved,
        ..records::release("rel-1", "the release")
    };
    let handler = move |iface: &str, name: &str, arg: &Value| -> Result<Value, HostError> {
        match (iface, name) {
            ("library", "download.get") if arg["id"] == "dl-1" => Ok(json!(download)),
            ("library", "download.get") => Err(HostError::NotFound(format!("no download {}", arg["id"]))),
            ("library", "plan.get") if arg["id"] == "plan-1" => Ok(json!(plan)),
            ("library", "entity.get") if arg["id"] == "ent-1" => Ok(json!(entity)),
            ("library", "release.get") if arg["id"] == "rel-1" => Ok(json!(release)),
            ("library", "episodes.for-entity") if arg["id"] == "ent-1" => {
                let titles = ["Hello, Ms. Cobel", "Goodbye, Mrs. Selvig", "Who Is Alive?"];
                let episodes: Vec<Value> = (1..=3)
                    .map(|e| {
                        let file = held.iter().find(|(h, _)| *h == e).map(|(_, f)| f.clone());
                        json!({"entityId": "ent-1", "season": 2, "episode": e, "absolute": 9 + e,
                            "title": titles[e as usize - 1], "airDate": "2025-01-17", "monitored": true,
                            "file": file, "state": if file.is_some() { "have" } else { "missing" }})
                    })
                    .collect();
                Ok(json!(episodes))
            }
            ("drafts", "organization-plan") => {
                let new: NewOrganizationPlan = serde_json::from_value(arg.clone()).unwrap();
                seen.borrow_mut().push(arg.clone());
                let items = json!(new.items);
                let body = json!({"downloadTaskId": new.download_task_id, "mode": new.mode, "items": items});
                let organization = records::organization("org-1", &new.download_task_id, items);
                let artifact = Artifact { payload_hash: "f1".into(), ..records::artifact("art-1", body) };
                Ok(json!(OrganizationPlanned { organization, artifact }))
            }
            _ => Err(HostError::NotFound(format!("{iface} {name}"))),
        }
    };
    (Box::new(handler), drafted)
}

fn write(dir: &std::path::Path, path: &str, size: usize) {
    let full = dir.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, vec![1u8; size]).unwrap();
}

fn call(input: Value) -> Result<Value, Failure> {
    match invoke::<OrganizePlan>(input)? {
        Called::Succeeded(v) => Ok(v),
        Called::Pending(v) => panic!("planning is never pending: {v}"),
    }
}

#[test]
fn a_movie_folder_becomes_one_templated_item_without_samples_or_extras() {
    let downloads = tempfile::tempdir().unwrap();
    let library = tempfile::tempdir().unwrap();
    let folder = "Dune.Part.Two.2024.2160p.BluRay.x265-FLUX";
    write(downloads.path(), &format!("{folder}/Dune.Part.Two.2024.2160p.BluRay.x265-FLUX.mkv"), 50_000);
    write(downloads.path(), &format!("{folder}/Sample/dune-sample.mkv"), 40_000);
    write(downloads.path(), &format!("{folder}/dune.sample.mkv"), 40_000);
    write(downloads.path(), &format!("{folder}/Dune-trailer.mp4"), 30_000);
    write(downloads.path(), &format!("{folder}/tiny-intro.mkv"), 100);
    write(downloads.path(), &format!("{folder}/Dune.nfo"), 100);
    let (handler, drafted) = store(
        "movie",
        DownloadStatus::Completed,
        folder,
        json!({"source": "Blu-ray", "screen_size": "2160p", "release_group": "FLUX"}),
    );
    MockHost::new("organize.plan")
        .with_grant(Class::Propose)
        .with_root("downloads", downloads.path())
        .with_root("library", library.path())
        .with_domain(handler)
        .install();

    let out = call(json!({"downloadTaskId": "dl-1"})).unwrap();
    let destination = "Dune - Part Two (2024)/Dune - Part Two (2024) Bluray-2160p.mkv";
    assert_eq!(out["organizationId"], "org-1");
    assert_eq!(out["fingerprint"], "f1");
    assert_eq!(out["mode"], "hardlink");
    assert_eq!(
        out["items"],
        json!([{"source": format!("{folder}/Dune.Part.Two.2024.2160p.BluRay.x265-FLUX.mkv"), "destination": destination, "size": 50_000}])
    );
    // What was frozen is exactly what the caller was shown.
    let frozen: NewOrganizationPlan = serde_json::from_value(drafted.borrow()[0].clone()).unwrap();
    let shown = out["items"].as_array().unwrap().clone();
    assert_eq!(
        frozen,
        NewOrganizationPlan { download_task_id: "dl-1".into(), mode: OrganizeMode::Hardlink, items: shown }
    );
    // Planning touches no file.
    assert_eq!(std::fs::read_dir(library.path()).unwrap().count(), 0);
}

#[test]
fn a_season_pack_names_every_episode_and_honours_the_mode_setting() {
    let downloads = tempfile::tempdir().unwrap();
    let pack = "Severance.S02.1080p.ATVP.WEB-DL.DDP5.1.H.264-NTb";
    for e in 1..=3 {
        write(downloads.path(), &format!("{pack}/Severance.S02E0{e}.1080p.WEB-DL-NTb.mkv"), 10_000 + e);
    }
    let (handler, _) =
        store("tv", DownloadStatus::Completed, pack, json!({"source": "Web", "screen_size": "1080p", "season": 2}));
    MockHost::new("organize.plan")
        .with_setting("mode", "copy")
        .with_root("downloads", downloads.path())
        .with_domain(handler)
        .install();
    let out = call(json!({"downloadTaskId": "dl-1"})).unwrap();
    assert_eq!(out["mode"], "copy");
    let destinations: Vec<&str> =
        out["items"].as_array().unwrap().iter().map(|i| i["destination"].as_str().unwrap()).collect();
    assert_eq!(
        destinations,
        [
            "Severance (2022)/Season 02/Severance - S02E01 - Hello, Ms. Cobel.mkv",
            "Severance (2022)/Season 02/Severance - S02E02 - Goodbye, Mrs. Selvig.mkv",
            "Severance (2022)/Season 02/Severance - S02E03 - Who Is Alive.mkv",
        ]
    );
    // Each file says which episodes it holds, for the import to record.
    assert_eq!(out["items"][1]["episodes"], json!([{"season": 2, "episode": 2}]));
    // The input's mode wins over the setting.
    let out = call(json!({"downloadTaskId": "dl-1", "mode": "move"})).unwrap();
    assert_eq!(out["mode"], "move");
}

#[test]
fn an_upgrade_names_the_files_it_replaces_but_never_half_of_a_double_episode() {
    let downloads = tempfile::tempdir().unwrap();
    let folder = "Severance.S02E01E02.2160p.WEB-DL-NTb";
    write(downloads.path(), &format!("{folder}/Severance.S02E01.2160p.WEB-DL-NTb.mkv"), 10_001);
    write(downloads.path(), &format!("{folder}/Severance.S02E02.2160p.WEB-DL-NTb.mkv"), 10_002);
    // Episode 1 has a file of its own; 2 and 3 share a double-episode file.
    let held = [(1, "old/S02E01.mkv"), (2, "old/S02E02E03.mkv"), (3, "old/S02E02E03.mkv")];
    let parsed = json!({"screen_size": "2160p", "season": 2, "episodes": [1, 2]});
    let (handler, _) = store_holding("tv", DownloadStatus::Completed, folder, parsed, &held);
    MockHost::new("organize.plan").with_root("downloads", downloads.path()).with_domain(handler).install();
    let out = call(json!({"downloadTaskId": "dl-1"})).unwrap();
    assert_eq!(out["items"][0]["replaces"], json!(["old/S02E01.mkv"]));
    // The download lacks episode 3, so the double file stays.
    assert!(out["items"][1].get("replaces").is_none(), "{out}");
}

#[test]
fn anime_files_numbered_over_the_series_land_in_their_season() {
    let downloads = tempfile::tempdir().unwrap();
    let batch = "[Grp] Severance (10-12) [1080p]";
    for n in 10..=12 {
        write(downloads.path(), &format!("{batch}/[Grp] Severance - {n} [1080p].mkv"), 10_000 + n);
    }
    // The release names episodes and no season: absolute numbers.
    let (handler, _) =
        store("tv", DownloadStatus::Completed, batch, json!({"screen_size": "1080p", "episodes": [10, 11, 12]}));
    MockHost::new("organize.plan").with_root("downloads", downloads.path()).with_domain(handler).install();
    let out = call(json!({"downloadTaskId": "dl-1"})).unwrap();
    let items = out["items"].as_array().unwrap();
    assert_eq!(items.len(), 3, "{out}");
    assert_eq!(items[0]["destination"], "Severance (2022)/Season 02/Severance - S02E01 - Hello, Ms. Cobel.mkv");
    assert_eq!(items[2]["episodes"], json!([{"season": 2, "episode": 3}]));
}

#[test]
fn bad_templates_unfinished_downloads_and_missing_content_are_clear_failures() {
    let downloads = tempfile::tempdir().unwrap();
    write(downloads.path(), "Dune.mkv", 1000);
    let (handler, drafted) = store("movie", DownloadStatus::Completed, "Dune.mkv", json!({}));
    MockHost::new("organize.plan")
        .with_setting("movie_template", "{Movie Title} {Resolution}")
        .with_root("downloads", downloads.path())
        .with_domain(handler)
        .install();
    let Err(Failure::InvalidInput(m)) = call(json!({"downloadTaskId": "dl-1"})) else {
        panic!("expected invalid input")
    };
    assert!(m.contains("movie_template") && m.contains("{Resolution}"), "{m}");
    assert!(drafted.borrow().is_empty(), "nothing is drafted from a bad template");

    let (handler, _) = store("movie", DownloadStatus::Downloading, "Dune.mkv", json!({}));
    MockHost::new("organize.plan").with_root("downloads", downloads.path()).with_domain(handler).install();
    let Err(Failure::Conflict(m)) = call(json!({"downloadTaskId": "dl-1"})) else { panic!("expected a conflict") };
    assert!(m.contains("downloading"), "{m}");

    let (handler, _) = store("movie", DownloadStatus::Completed, "Gone.Movie.2020", json!({}));
    MockHost::new("organize.plan").with_root("downloads", downloads.path()).with_domain(handler).install();
    assert!(matches!(call(json!({"downloadTaskId": "dl-1"})), Err(Failure::NotFound(_))));
    assert!(matches!(call(json!({"downloadTaskId": "nope"})), Err(Failure::NotFound(_))));
    assert!(matches!(call(json!({"downloadTaskId": " "})), Err(Failure::InvalidInput(_))));

    let (handler, _) = store("movie", DownloadStatus::Completed, "./", json!({}));
    MockHost::new("organize.plan").with_root("downloads", downloads.path()).with_domain(handler).install();
    let Err(Failure::Conflict(m)) = call(json!({"downloadTaskId": "dl-1"})) else { panic!("expected a conflict") };
    assert!(m.contains("whole downloads root"), "{m}");

    let (handler, _) = store("movie", DownloadStatus::Completed, "../etc", json!({}));
    MockHost::new("organize.plan").with_root("downloads", downloads.path()).with_domain(handler).install();
    assert!(matches!(call(json!({"downloadTaskId": "dl-1"})), Err(Failure::Denied(_))));
}

#[test]
fn the_descriptor_speaks_english_and_chinese() {
    let d = descriptor::<OrganizePlan>();
    assert_eq!(d.id, "organize.plan");
    for alias in ["organize", "import", "rename", "整理", "入库", "重命名"] {
        assert!(d.aliases.iter().any(|a| a == alias), "{alias}");
    }
    assert!(d.tags.iter().any(|t| t == "policy.library"));
    assert!(d.input_schema.contains("downloadTaskId"));
}
