//! Skills as an operator meets them: the built-ins listed, a skill dropped
//! into the skills folder read at once, a broken one refused with its
//! reason — in the API and at the command line — and one skill whole.

use capstan::store::Db;
use capstan_tests::api::{Api, serve};
use capstan_tests::binary::{capstan_bin, stderr, stdout};
use capstan_tests::host::TestHost;
use serde_json::Value;

fn write_skill(dir: &std::path::Path, name: &str, tools: &str) -> std::path::PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    let text = format!("---\nname: {name}\ndescription: \"What {name} is for\"\ntools: [{tools}]\n---\nLook first.\n");
    std::fs::write(folder.join("SKILL.md"), text).unwrap();
    folder
}

fn names(list: &Value) -> Vec<&str> {
    list["skills"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn skills_are_listed_refused_with_their_reason_and_checked_at_the_command_line() {
    let host = TestHost::new();
    let db = Db::open(&Db::default_url(host.dir.path())).await.unwrap();
    let app = capstan::app::App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let base = serve(app.clone()).await;
    let api = Api::new(&base).signed_in(&db, "ada").await;

    // A first start: the built-in skills, every one ready.
    let list = api.json("/skills").await;
    assert_eq!(names(&list), ["download-not-in-library", "failed-import", "stuck-download", "wanted-not-fetched"]);
    assert_eq!(list["refused"], serde_json::json!([]), "{list}");
    assert_eq!(list["skills"][0]["source"]["kind"], "builtIn");

    // Dropped in while serving: read at the next listing, no restart.
    let skills_dir = host.config.skills_dir();
    write_skill(&skills_dir, "check-space", "inventory.query, task.inspect");
    let broken = write_skill(&skills_dir, "broken", "inventory.query, files.erase");
    let list = api.json("/skills").await;
    assert!(names(&list).contains(&"check-space"), "{list}");
    let refused = &list["refused"][0];
    assert_eq!(refused["folder"], "broken", "{list}");
    let reason = refused["reason"].as_str().unwrap();
    assert!(reason.contains("not loaded: files.erase"), "{reason}");

    let (status, skill) = api.get("/skills/check-space").await;
    assert_eq!(status, 200, "{skill}");
    assert_eq!(
        (skill["instructions"].as_str(), &skill["tools"]),
        (Some("Look first."), &serde_json::json!(["inventory.query", "task.inspect"]))
    );
    let (status, error) = api.get("/skills/broken").await;
    assert_eq!(status, 404);
    assert!(error["error"]["message"].as_str().unwrap().contains("files.erase"), "{error}");
    let (status, error) = api.get("/skills/absent").await;
    assert_eq!((status, error["error"]["message"].as_str()), (404, Some("no skill is named absent")));
    let (status, _) = Api::new(&base).get("/skills").await;
    assert_eq!(status, 401, "skills are for signed-in callers");

    // A run may start with a skill read; one that cannot be read refuses
    // the start, saying why, and starts nothing.
    let start = |skill: &str| serde_json::json!({"goal": "why?", "mode": "plan_only", "skill": skill});
    let (status, error) = api.post("/agent/runs", start("broken")).await;
    assert_eq!(status, 404, "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("the skill broken cannot be read: it lists tools"), "{message}");
    let (status, run) = api.post("/agent/runs", start("check-space")).await;
    assert_eq!((status, run["skill"].as_str()), (201, Some("check-space")), "{run}");
    assert_eq!(api.json("/agent/runs").await["items"].as_array().unwrap().len(), 1, "only the run that started");

    // The command line says the same, and its exit code tells a script.
    let data = host.config.data_dir();
    let data = data.to_str().unwrap();
    let cli = |args: &[&str]| {
        std::process::Command::new(capstan_bin())
            .args(["--data-dir", data])
            .args(args)
            .env("RUST_LOG", "warn")
            .env_remove("CAPSTAN_CONFIG")
            .output()
            .unwrap()
    };
    let checked = cli(&["skills", "check", broken.to_str().unwrap()]);
    assert!(!checked.status.success());
    assert!(
        stderr(&checked).contains("refused: it lists tools that are not loaded: files.erase"),
        "{}",
        stderr(&checked)
    );
    let checked = cli(&["skills", "check", skills_dir.join("check-space/SKILL.md").to_str().unwrap()]);
    assert!(checked.status.success(), "{}", stderr(&checked));
    assert!(stdout(&checked).starts_with("check-space: ready"), "{}", stdout(&checked));
    let listed = cli(&["skills", "list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let listed = stdout(&listed);
    assert!(listed.contains("check-space") && listed.contains("refused broken: it lists tools"), "{listed}");
}
