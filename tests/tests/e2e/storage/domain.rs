//! The domain store's invariants on both backends: plans reserve a slot
//! only at the revision they were drafted against, a download reports each
//! status change once, an organization starts only from its frozen
//! fingerprint and, when it succeeds, satisfies the slot; releases and
//! decisions are recorded once; bad arguments change nothing.

use capstan::domain::{
    Author, Domain, DomainError, DownloadTask, NewEntity, NewEpisode, NewOrganizationPlan, NewPlan, NewRelease,
    NewSlot, Slot, SourceRelease,
};
use capstan::store::Db;
use capstan_tests::both_backends;
use capstan_tests::db::{Backend, fresh_url};
use serde_json::json;

pub async fn open(backend: Backend, dir: &std::path::Path) -> Domain {
    let db = Db::open(&fresh_url(backend, dir).await).await.unwrap();
    Domain::new(db)
}

/// A wanted 2160p movie slot and an unidentified release for it.
pub async fn wanted_movie(domain: &Domain, hash: &str) -> (Slot, SourceRelease) {
    let entity = domain.upsert_entity(&capstan_tests::fixtures::dune_part_two()).await.unwrap();
    let slot = domain
        .want(&NewSlot { entity_id: entity.id.clone(), season: None, quality: "2160p".into(), profile: None })
        .await
        .unwrap();
    let release = domain
        .record_release(&NewRelease {
            indexer: "torznab".into(),
            title: "Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.H.265-FLUX".into(),
            parsed: json!({"title": "Dune Part Two", "year": 2024}),
            size: Some(20_000_000_000),
            infohash: Some(hash.into()),
            download_url: None,
            magnet_url: None,
        })
        .await
        .unwrap();
    (slot, release)
}

/// A wanted movie whose release was identified, planned, reserved and
/// handed to the download client under `hash`.
pub async fn submitted_download(domain: &Domain, hash: &str) -> (Slot, DownloadTask) {
    let task = Author::new("task:syncDownloads");
    let (slot, release) = wanted_movie(domain, hash).await;
    domain
        .match_identity(&release.id, Some(&slot.entity_id), capstan::domain::IdentityStatus::Resolved, &json!({}))
        .await
        .unwrap();
    let plan = domain
        .draft_plan(&task, &NewPlan { slot_id: slot.id.clone(), source_release_id: release.id.clone(), note: None })
        .await
        .unwrap();
    domain.reserve_plan(&plan.id).await.unwrap();
    let (_, download) = domain.mark_submitted(&plan.id, hash).await.unwrap();
    (slot, download)
}

fn conflict<T: std::fmt::Debug>(r: Result<T, DomainError>) -> String {
    match r {
        Err(DomainError::Conflict(m)) => m,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

async fn a_plan_reserves_its_slot_only_at_the_revision_it_was_drafted_against(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let domain = open(backend, dir.path()).await;
    let agent = Author { principal: "key:k1".into(), run_id: Some("run-1".into()), capability: None };
    let (slot, release) = wanted_movie(&domain, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA").await;
    let new = NewPlan { slot_id: slot.id.clone(), source_release_id: release.id.clone(), note: None };

    // Unidentified releases are not planned.
    let message = conflict(domain.draft_plan(&agent, &new).await);
    assert!(message.contains("resolve it"), "{message}");

    domain
        .match_identity(
            &release.id,
            Some(&slot.entity_id),
            capstan::domain::IdentityStatus::Resolved,
            &json!({"tmdb": 693134}),
        )
        .await
        .unwrap();
    let first = domain.draft_plan(&agent, &new).await.unwrap();
    assert_eq!((first.status.as_str(), first.revision, first.slot_revision), ("draft", 1, slot.revision));
    assert_eq!(first.created_by, "key:k1");
    assert_eq!(first.payload["infohash"], "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    // Drafting the same thing again is the same draft; a draft reserves nothing.
    assert_eq!(domain.draft_plan(&agent, &new).await.unwrap().id, first.id);
    assert_eq!(domain.slot(&slot.id).await.unwrap().status, capstan::domain::SlotStatus::Wanted);

    // A second plan for the same slot, drafted at the same revision.
    let other = domain
        .record_release(&NewRelease {
            indexer: "torznab".into(),
            title: "Dune.Part.Two.2024.2160p.BluRay.REMUX-GRP".into(),
            parsed: json!({}),
            size: None,
            infohash: Some("b".repeat(40)),
            download_url: None,
            magnet_url: None,
        })
        .await
        .unwrap();
    domain
        .match_identity(&other.id, Some(&slot.entity_id), capstan::domain::IdentityStatus::Resolved, &json!({}))
        .await
        .unwrap();
    let second = domain
        .draft_plan(&agent, &NewPlan { slot_id: slot.id.clone(), source_release_id: other.id.clone(), note: None })
        .await
        .unwrap();
    assert_ne!(second.payload_hash, first.payload_hash);

    let reserved = domain.reserve_plan(&first.id).await.unwrap();
    assert_eq!((reserved.status.as_str(), reserved.revision), ("reserved", 2));
    let slot_now = domain.slot(&slot.id).await.unwrap();
    assert_eq!((slot_now.status.as_str(), slot_now.revision), ("reserved", slot.revision + 1));
    // The other plan was made against the old slot revision.
    let message = conflict(domain.reserve_plan(&second.id).await);
    assert!(message.contains("changed since the plan was drafted"), "{message}");
    assert_eq!(domain.plan(&second.id).await.unwrap().status, capstan::domain::PlanStatus::Draft);

    // Submitting records one download task, however often it is repeated.
    let (submitted, download) = domain.mark_submitted(&first.id, &"A".repeat(40)).await.unwrap();
    assert_eq!(submitted.status, capstan::domain::PlanStatus::Submitted);
    let (_, again) = domain.mark_submitted(&first.id, &"a".repeat(40)).await.unwrap();
    assert_eq!(again.id, download.id);
    assert_eq!(download.status, capstan::domain::DownloadStatus::Queued);
    // A submitted plan cannot be cancelled.
    conflict(domain.end_plan(&first.id, capstan::domain::PlanStatus::Cancelled, "changed my mind").await);
    // Cancelling the other draft leaves the reserved slot alone.
    domain.end_plan(&second.id, capstan::domain::PlanStatus::Cancelled, "another release won").await.unwrap();
    assert_eq!(domain.slot(&slot.id).await.unwrap().status, capstan::domain::SlotStatus::Reserved);
}

async fn downloads_report_each_change_once_and_organizations_satisfy_the_slot(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let domain = open(backend, dir.path()).await;
    let task = Author::new("task:syncDownloads");
    let (slot, download) = submitted_download(&domain, &"c".repeat(40)).await;

    let items = vec![json!({"source": "Dune.mkv", "destination": "Dune Part Two (2024)/Dune Part Two (2024).mkv"})];
    let organize = NewOrganizationPlan {
        download_task_id: download.id.clone(),
        mode: capstan::domain::OrganizeMode::Hardlink,
        items,
    };
    // Nothing to organize before the download completes.
    assert!(matches!(domain.plan_organization(&task, &organize).await, Err(DomainError::Invalid(_))));

    let (_, change) = domain
        .update_download(&download.id, capstan::domain::DownloadStatus::Downloading, 0.5, None, None)
        .await
        .unwrap();
    assert_eq!(change.unwrap().to, capstan::domain::DownloadStatus::Downloading);
    let (_, change) = domain
        .update_download(&download.id, capstan::domain::DownloadStatus::Completed, 1.0, Some("/downloads/Dune"), None)
        .await
        .unwrap();
    assert_eq!(change.unwrap().from, capstan::domain::DownloadStatus::Downloading);
    let (done, change) = domain
        .update_download(&download.id, capstan::domain::DownloadStatus::Completed, 1.0, None, None)
        .await
        .unwrap();
    assert!(change.is_none(), "the same status twice is one change");
    assert_eq!(done.content_path.as_deref(), Some("/downloads/Dune"));
    assert!(matches!(
        domain.update_download(&download.id, capstan::domain::DownloadStatus::Completed, 1.5, None, None).await,
        Err(DomainError::Invalid(_))
    ));

    // An import may name as replaced only a file the slot holds: none yet.
    let stranger = NewOrganizationPlan {
        items: vec![json!({"source": "Dune.mkv", "destination": "Dune.mkv", "replaces": ["Other (2020)/Other.mkv"]})],
        ..organize.clone()
    };
    let refused = domain.plan_organization(&task, &stranger).await.unwrap_err();
    assert!(refused.to_string().contains("not a file the library holds"), "{refused}");
    assert!(domain.organizations_for_download(&download.id).await.unwrap().is_empty(), "nothing was drafted");

    let (org, artifact) = domain.plan_organization(&task, &organize).await.unwrap();
    assert_eq!((org.status.as_str(), artifact.kind.as_str()), ("planned", "plan"));
    assert!(!org.replaces);
    let (same, _) = domain.plan_organization(&task, &organize).await.unwrap();
    assert_eq!(same.id, org.id, "the same frozen plan is the same organization");

    let message = conflict(domain.start_organization(&org.id, "not-the-fingerprint").await);
    assert!(message.contains("fingerprint"), "{message}");
    assert_eq!(domain.organization(&org.id).await.unwrap().status, capstan::domain::OrganizationStatus::Planned);
    domain.start_organization(&org.id, &artifact.payload_hash).await.unwrap();
    assert_eq!(domain.download(&download.id).await.unwrap().status, capstan::domain::DownloadStatus::Importing);
    // While importing, the client's view no longer moves the record.
    conflict(domain.update_download(&download.id, capstan::domain::DownloadStatus::Completed, 1.0, None, None).await);
    let finished = domain.finish_organization(&org.id, None).await.unwrap();
    assert_eq!(finished.status, capstan::domain::OrganizationStatus::Succeeded);
    assert_eq!(domain.download(&download.id).await.unwrap().status, capstan::domain::DownloadStatus::Imported);
    let held = domain.slot(&slot.id).await.unwrap();
    assert_eq!(held.status, capstan::domain::SlotStatus::Satisfied);
    assert_eq!(held.file.as_deref(), Some("Dune Part Two (2024)/Dune Part Two (2024).mkv"), "what it now holds");
    assert!(held.file_release_id.is_some());
    // An imported download no longer changes.
    conflict(domain.update_download(&download.id, capstan::domain::DownloadStatus::Missing, 0.0, None, None).await);

    // Each change was published once, in order.
    let log = capstan::events::Events::new(domain.db().clone()).list(0, 100).await.unwrap();
    let downloads: Vec<&str> =
        log.iter().filter(|e| e.kind == "download.status_changed").map(|e| e.payload["to"].as_str().unwrap()).collect();
    assert_eq!(downloads, vec!["downloading", "completed"]);
    let organizations: Vec<&str> = log
        .iter()
        .filter(|e| e.kind == "organization.changed")
        .map(|e| e.payload["status"].as_str().unwrap())
        .collect();
    assert_eq!(organizations, vec!["running", "succeeded"]);
}

async fn releases_and_decisions_are_recorded_once_and_bad_arguments_change_nothing(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let domain = open(backend, dir.path()).await;
    let (slot, release) = wanted_movie(&domain, &"d".repeat(40)).await;
    let same = domain
        .record_release(&NewRelease {
            indexer: "other-indexer".into(),
            title: "another name for the same torrent".into(),
            parsed: json!({}),
            size: None,
            infohash: Some("D".repeat(40)),
            download_url: None,
            magnet_url: None,
        })
        .await
        .unwrap();
    assert_eq!(same.id, release.id, "one release per infohash");
    // A release listed without a hash is one per indexer and link.
    let hashless = |indexer: &str, link: &str| NewRelease {
        indexer: indexer.into(),
        title: "Dune.Part.Two.2024.1080p.WEB-DL-FLUX".into(),
        parsed: json!({}),
        size: None,
        infohash: None,
        download_url: Some(link.into()),
        magnet_url: None,
    };
    let link = "https://tracker.example/download.php?id=41&passkey=%5Bredacted%5D";
    let first = domain.record_release(&hashless("rss", link)).await.unwrap();
    let again = domain.record_release(&hashless("rss", link)).await.unwrap();
    assert_eq!(again.id, first.id, "read again, the same release");
    let other = domain.record_release(&hashless("rss", &link.replace("41", "42"))).await.unwrap();
    let elsewhere = domain.record_release(&hashless("rss-2", link)).await.unwrap();
    assert!(other.id != first.id && elsewhere.id != first.id && other.id != elsewhere.id);
    let bad_hash = NewRelease {
        indexer: "i".into(),
        title: "t".into(),
        parsed: json!({}),
        size: None,
        infohash: Some("xyz".into()),
        download_url: None,
        magnet_url: None,
    };
    assert!(matches!(domain.record_release(&bad_hash).await, Err(DomainError::Invalid(_))));

    let (decision, created) = domain
        .open_decision(
            "identity_ambiguous",
            Some(&release.id),
            &json!([{"id": "a", "label": "A", "action": "accept"}]),
            &json!({}),
            "identity:x",
        )
        .await
        .unwrap();
    assert!(created);
    let (again, created) = domain
        .open_decision("identity_ambiguous", Some(&release.id), &json!([]), &json!({}), "identity:x")
        .await
        .unwrap();
    assert!(!created);
    assert_eq!(again.id, decision.id);

    // Through the import-facing dispatch: unknown names and fields are refused.
    let err = domain.query("entity.delete", "{}").await.unwrap_err();
    assert!(matches!(err, DomainError::NotFound(ref m) if m.contains("entity.get")), "{err:?}");
    let err = domain.query("slot.get", r#"{"id": "x", "extra": 1}"#).await.unwrap_err();
    assert!(matches!(err, DomainError::Invalid(ref m) if m.contains("unknown field")), "{err:?}");
    let err =
        domain.create_draft(&Author::new("key:k"), "entity", r#"{"kind": "book", "title": "x"}"#).await.unwrap_err();
    assert!(matches!(err, DomainError::Invalid(_)), "{err:?}");
    let err = domain
        .want(&NewSlot { entity_id: slot.entity_id.clone(), season: Some(1), quality: "1080p".into(), profile: None })
        .await
        .unwrap_err();
    assert!(matches!(err, DomainError::Invalid(ref m) if m.contains("no season")), "{err:?}");
    let inventory = domain.query("inventory", "{}").await.unwrap();
    assert_eq!(inventory["items"].as_array().unwrap().len(), 1);
    assert_eq!(inventory["items"][0]["slots"].as_array().unwrap().len(), 1, "the refused slot was not added");
}

/// Slots come back in the order they were opened, even when many are
/// opened within one millisecond.
async fn slots_keep_their_opening_order(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let domain = open(backend, dir.path()).await;
    let series = domain
        .upsert_entity(&NewEntity {
            kind: capstan::domain::EntityKind::Tv,
            tmdb_id: Some(1399),
            title: "Game of Thrones".into(),
            original_title: None,
            year: Some(2011),
            seasons: vec![],
            episodes: Vec::new(),
        })
        .await
        .unwrap();
    let mut opened = Vec::new();
    for season in 1..=20 {
        let slot = domain
            .want(&NewSlot {
                entity_id: series.id.clone(),
                season: Some(season),
                quality: "1080p".into(),
                profile: None,
            })
            .await
            .unwrap();
        opened.push(slot.id);
    }
    let listed: Vec<String> = domain.slots_for_entity(&series.id).await.unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(listed, opened);
}

/// A series can list at most 20,000 episodes, over however many calls: the
/// call that would pass it is refused and changes nothing.
async fn a_series_lists_a_bounded_number_of_episodes(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let domain = open(backend, dir.path()).await;
    let series = |episodes: Vec<NewEpisode>| NewEntity {
        kind: capstan::domain::EntityKind::Tv,
        tmdb_id: Some(77),
        title: "The Long Game".into(),
        original_title: None,
        year: Some(2001),
        seasons: vec![],
        episodes,
    };
    let episodes = |season: i64, count: i64| -> Vec<NewEpisode> {
        (1..=count).map(|episode| NewEpisode { season, episode, title: None, air_date: None }).collect()
    };
    let full: Vec<NewEpisode> = (1..=20).flat_map(|season| episodes(season, 1000)).collect();
    let entity = domain.upsert_entity(&series(full)).await.unwrap();
    assert_eq!(domain.episodes(&entity.id).await.unwrap().len(), 20_000);
    let Err(DomainError::Invalid(why)) = domain.upsert_entity(&series(episodes(21, 1))).await else {
        panic!("one episode past the bound was taken")
    };
    assert!(why.contains("20001") && why.contains("20000"), "{why}");
    assert_eq!(domain.episodes(&entity.id).await.unwrap().len(), 20_000, "nothing changed");
}

/// Two handles on one database stand for two processes.
async fn an_organization_is_held_by_one_call_at_a_time_across_processes(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_url(backend, dir.path()).await;
    let (here, there) = (Domain::new(Db::open(&url).await.unwrap()), Domain::new(Db::open(&url).await.unwrap()));
    let task = Author::new("task:syncDownloads");
    let (_, download) = submitted_download(&here, &"e".repeat(40)).await;
    here.update_download(&download.id, capstan::domain::DownloadStatus::Completed, 1.0, Some("/downloads/Dune"), None)
        .await
        .unwrap();
    let items = vec![json!({"source": "Dune.mkv", "destination": "Dune (2024)/Dune (2024).mkv"})];
    let organize =
        NewOrganizationPlan { download_task_id: download.id.clone(), mode: capstan::domain::OrganizeMode::Copy, items };
    let (org, _) = here.plan_organization(&task, &organize).await.unwrap();
    let later = capstan::store::now_ms() + 60_000;

    assert!(here.hold_organization(&org.id, "call-a", later).await.unwrap());
    assert!(!there.hold_organization(&org.id, "call-b", later).await.unwrap(), "held by call-a");
    assert!(here.hold_organization(&org.id, "call-a", later + 1).await.unwrap(), "the holder renews");
    there.release_organization(&org.id, "call-b").await.unwrap();
    assert!(!there.hold_organization(&org.id, "call-b", later).await.unwrap(), "only the holder lets go");
    here.release_organization(&org.id, "call-a").await.unwrap();
    assert!(there.hold_organization(&org.id, "call-b", later).await.unwrap(), "free once released");

    // A holder that stopped renewing (its process died) is overtaken once
    // its hold has run out.
    assert!(there.hold_organization(&org.id, "call-b", capstan::store::now_ms() - 1).await.unwrap());
    assert!(here.hold_organization(&org.id, "call-c", later).await.unwrap(), "call-b's hold ran out");

    assert!(matches!(here.hold_organization("no-such-id", "call-a", later).await, Err(DomainError::NotFound(_))));

    // A renewal that reaches the database after its call let go takes
    // nothing back: the next call takes the organization at once.
    here.renew_organization(&org.id, "call-c", later + 2).await.unwrap();
    here.release_organization(&org.id, "call-c").await.unwrap();
    here.renew_organization(&org.id, "call-c", later + 3).await.unwrap();
    assert!(there.hold_organization(&org.id, "call-d", later).await.unwrap(), "a late renewal took it back");
    there.renew_organization(&org.id, "call-c", later + 4).await.unwrap();
    assert!(!here.hold_organization(&org.id, "call-e", later).await.unwrap(), "call-d still holds it");
}

/// A wanted title comes before the satisfied ones a PROPER could still
/// reach, so a large library never crowds it out of the feeds' bound.
async fn wanted_titles_come_first_among_those_open_to_releases(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let domain = open(backend, dir.path()).await;
    let mut slots = Vec::new();
    for (tmdb, title) in [(1, "Held One"), (2, "Held Two"), (3, "Wanted Last")] {
        let entity = domain
            .upsert_entity(&NewEntity {
                kind: capstan::domain::EntityKind::Movie,
                tmdb_id: Some(tmdb),
                title: title.into(),
                original_title: None,
                year: Some(2020),
                seasons: vec![],
                episodes: Vec::new(),
            })
            .await
            .unwrap();
        let want = capstan::domain::NewSlot {
            entity_id: entity.id,
            season: None,
            quality: "any".into(),
            profile: Some("quality.movies".into()),
        };
        slots.push(domain.want(&want).await.unwrap());
    }
    for held in &slots[..2] {
        sqlx::query("UPDATE media_slot SET status = 'satisfied' WHERE id = $1")
            .bind(&held.id)
            .execute(&domain.db().pool)
            .await
            .unwrap();
    }
    let first = domain.slots_open_to_releases(1).await.unwrap();
    assert_eq!(first[0].id, slots[2].id, "the wanted slot, though the newest");
    let entities = domain.entities_open_to_releases(1).await.unwrap();
    assert_eq!(entities[0].title, "Wanted Last");
    assert_eq!(domain.slots_open_to_releases(10).await.unwrap().len(), 3, "the satisfied ones follow");
}

both_backends!(
    wanted_titles_come_first_among_those_open_to_releases,
    a_series_lists_a_bounded_number_of_episodes,
    an_organization_is_held_by_one_call_at_a_time_across_processes,
    slots_keep_their_opening_order,
    a_plan_reserves_its_slot_only_at_the_revision_it_was_drafted_against,
    downloads_report_each_change_once_and_organizations_satisfy_the_slot,
    releases_and_decisions_are_recorded_once_and_bad_arguments_change_nothing,
);
