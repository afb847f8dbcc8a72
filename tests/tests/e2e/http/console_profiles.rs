//! A newcomer in a real Chromium writes a quality profile on the Library
//! tab: a mistake is named under the form and nothing is published; a good
//! profile is published and listed in words; a title holding a file below
//! its cutoff says it is upgrading; editing the profile to a lower cutoff
//! settles the title at once. Over the API, only a console session writes
//! a profile, and every refused body changes nothing. The same tab lists
//! the blocklist, each release with why, and unblocks one.

use capstan::domain::{NewRelease, NewSlot, SlotStatus};
use capstan_tests::api::Api;
use capstan_tests::browser::Browser;
use capstan_tests::db::Backend;
use reqwest::Method;
use serde_json::json;

use crate::media::titles::env;

#[tokio::test(flavor = "multi_thread")]
async fn a_newcomer_writes_a_quality_profile_and_sees_a_title_upgrading() {
    let env = env(Backend::Sqlite).await;
    let base = capstan_tests::api::serve(env.app.clone()).await;
    let root = base.trim_end_matches("/api/v1").to_string();
    // A movie whose 720p file is in the library, wanting quality.movies.
    let dune = env.svc.domain.upsert_entity(&capstan_tests::fixtures::dune_part_two()).await.unwrap();
    let wanted = NewSlot {
        entity_id: dune.id.clone(),
        season: None,
        quality: "any".into(),
        profile: Some("quality.movies".into()),
    };
    let slot = env.svc.domain.want(&wanted).await.unwrap();
    let release = env
        .svc
        .domain
        .record_release(&NewRelease {
            indexer: "torznab".into(),
            title: "Dune.Part.Two.2024.720p.WEB-DL.DDP5.1.H.264-FLUX".into(),
            parsed: json!({"screen_size": "720p", "source": "Web", "release_group": "FLUX"}),
            size: Some(4_000_000_000),
            infohash: Some("0123456789abcdef0123456789abcdef01234567".into()),
            download_url: None,
            magnet_url: None,
        })
        .await
        .unwrap();
    sqlx::query("UPDATE media_slot SET status = 'satisfied', file = $2, file_release_id = $3 WHERE id = $1")
        .bind(&slot.id)
        .bind("Dune - Part Two (2024)/Dune - Part Two (2024) WEBDL-720p.mkv")
        .bind(&release.id)
        .execute(&env.svc.db.pool)
        .await
        .unwrap();

    capstan::http::session::set_password(&env.db, "newcomer", "correct horse battery").await.unwrap();
    let browser = Browser::start().await;
    browser.sign_in(&root, "newcomer", "correct horse battery").await;
    browser.click("nav button[data-tab=library]").await;
    browser.wait_text("#profiles", "said there is none", |t| t.contains("No quality profile yet")).await;

    // A resolution nobody knows is named, and nothing is published.
    browser.fill("#profile-name", "quality.movies").await;
    browser.fill("#profile-resolutions", "2160p, 1080p, 4k").await;
    browser.fill("#profile-cutoff", "1080p").await;
    browser.click("#profile-save").await;
    browser.wait_text("#profile-error", "named the mistake", |t| t.contains("\"4k\" is not one of")).await;
    assert!(env.svc.authz.policies().await.unwrap().is_empty(), "nothing was drafted");

    browser.fill("#profile-resolutions", "2160p, 1080p, 720p").await;
    browser.fill("#profile-reject", "CAM, HDTS").await;
    browser.click("#profile-save").await;
    browser.wait_text("#profile-done", "published it", |t| t.contains("Published quality.movies (revision 1)")).await;
    let listed = browser.wait_text("#profiles", "listed it", |t| t.contains("quality.movies")).await;
    assert!(listed.contains("2160p > 1080p > 720p, upgraded until 1080p; rejects CAM, HDTS"), "{listed}");
    // The title's 720p file is below the cutoff: it is wanted again, and says why.
    let row = browser.wait_text("#library", "showed the upgrade", |t| t.contains("upgrading")).await;
    assert!(row.contains("upgrading: have 720p, cutoff 1080p"), "{row}");
    assert_eq!(env.svc.domain.slot(&slot.id).await.unwrap().status, SlotStatus::Wanted);

    // Edit it down to 720p: the title is satisfied as it is.
    browser.click("#profiles li[data-profile='quality.movies'] button").await;
    assert_eq!(browser.prop("#profile-cutoff", "value").await.as_deref(), Some("1080p"), "the form holds the profile");
    browser.fill("#profile-cutoff", "720p").await;
    browser.click("#profile-save").await;
    browser.wait_text("#profile-done", "published it again", |t| t.contains("(revision 2)")).await;
    browser
        .wait_text("#library", "settled the title", |t| !t.contains("upgrading") && t.contains("in the library"))
        .await;
    assert_eq!(env.svc.domain.slot(&slot.id).await.unwrap().status, SlotStatus::Satisfied);
    browser.close().await;

    // Over the API: refused bodies change nothing; a key may not write.
    let admin = Api::new(&base).signed_in(&env.svc.db, "admin").await;
    for (name, body) in [
        ("quality.movies", json!({"preferredResolutions": []})),
        ("quality.movies", json!({"preferredResolutions": ["1080p"], "cutoff": "720p"})),
        ("quality.movies", json!({"preferredResolutions": ["1080p"], "rejectTerms": vec!["x"; 101]})),
        ("quality.movies", json!({"preferredResolutions": ["1080p"], "color": "blue"})),
        ("quality.movies", json!(["1080p"])),
        ("movies", json!({"preferredResolutions": ["1080p"]})),
        ("quality.Movies", json!({"preferredResolutions": ["1080p"]})),
    ] {
        let (status, answer) = admin.send(Method::PUT, &format!("/policies/{name}"), body.clone()).await;
        assert_eq!(status, 422, "{name} {body}: {answer}");
    }
    assert_eq!(env.svc.authz.policies().await.unwrap().len(), 2, "only the two published revisions");
    let key = capstan::http::keys::create(&env.db, "execute", &[capstan::runtime::EffectClass::Execute], "test")
        .await
        .unwrap();
    let key = Api::new(&base).with_key(&key);
    let (status, _) =
        key.send(Method::PUT, "/policies/quality.movies", json!({"preferredResolutions": ["1080p"]})).await;
    assert_eq!(status, 403, "profiles are written from a console session");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_blocked_release_is_listed_with_why_and_unblocked_from_the_console() {
    let env = env(Backend::Sqlite).await;
    let base = capstan_tests::api::serve(env.app.clone()).await;
    let root = base.trim_end_matches("/api/v1").to_string();
    let release = env
        .svc
        .domain
        .record_release(&NewRelease {
            indexer: "torznab".into(),
            title: "Dune.Part.Two.2024.2160p.WEB-DL-FAKE".into(),
            parsed: json!({"screen_size": "2160p"}),
            size: Some(1_000),
            infohash: Some("fedcba9876543210fedcba9876543210fedcba98".into()),
            download_url: None,
            magnet_url: None,
        })
        .await
        .unwrap();
    env.svc.domain.block_release(&release.id, "the files are a fake", "admin:alice").await.unwrap();
    capstan::http::session::set_password(&env.db, "newcomer", "correct horse battery").await.unwrap();
    let browser = Browser::start().await;
    browser.sign_in(&root, "newcomer", "correct horse battery").await;
    browser.click("nav button[data-tab=library]").await;
    let listed = browser.wait_text("#blocklist", "listed it", |t| t.contains("WEB-DL-FAKE")).await;
    assert!(listed.contains("the files are a fake") && listed.contains("admin:alice"), "{listed}");
    browser.click(&format!("#blocklist li[data-release-id='{}'] button", release.id)).await;
    browser.wait_text("#blocklist", "emptied it", |t| t.contains("Nothing is blocked.")).await;
    assert!(env.svc.domain.blocklist(10).await.unwrap().is_empty());
    browser.close().await;
}
