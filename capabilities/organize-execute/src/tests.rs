//! Native tests through the SDK's mock host: real files in temporary
//! `downloads` and `library` folders, a small stateful domain store, and
//! what a user would notice — the library file, how it got there, the
//! organization's state, and that nothing is overwritten.

use std::cell::RefCell;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::rc::Rc;

use capstan_sdk::contract::ops::transitions::{OrganizationFinish, OrganizationStart};
use capstan_sdk::contract::records::{Artifact, DownloadTask, Organization};
use capstan_sdk::contract::status::{DownloadStatus, OrganizationStatus, OrganizeMode};
use capstan_sdk::testing::{Called, MockHost, descriptor, invoke, records};
use capstan_sdk::{Failure, HostError, Verification};
use serde_json::{Value, json};

use crate::{ExecuteInput, OrganizeExecute};

const SOURCE: &str = "Dune.Part.Two.2024.2160p/Dune.Part.Two.2024.2160p.mkv";
const DESTINATION: &str = "Dune - Part Two (2024)/Dune - Part Two (2024) Bluray-2160p.mkv";

/// The store's state: organization status and every transition applied.
struct Store {
    status: OrganizationStatus,
    transitions: Vec<(String, Value)>,
    /// A file someone deletes just as the organization starts.
    lost_on_start: Option<std::path::PathBuf>,
}

fn domain(mode: OrganizeMode, size: u64) -> Rc<RefCell<Store>> {
    let store = Rc::new(RefCell::new(Store {
        status: OrganizationStatus::Planned,
        transitions: Vec::new(),
        lost_on_start: None,
    }));
    let state = store.clone();
    let items = json!([{"source": SOURCE, "destination": DESTINATION, "size": size}]);
    // The artifact holds what the `organization-plan` draft froze.
    let body = json!({"downloadTaskId": "dl-1", "mode": mode, "items": items});
    let organization = move |status: OrganizationStatus| {
        json!(Organization {
            plan_artifact_id: "art-1".into(),
            mode,
            status,
            ..records::organization("org-1", "dl-1", items.clone())
        })
    };
    let handler = move |iface: &str, name: &str, arg: &Value| -> Result<Value, HostError> {
        let mut s = state.borrow_mut();
        match (iface, name) {
            ("library", "organization.get") if arg["id"] == "org-1" => Ok(organization(s.status)),
            ("library", "organization.get") => Err(HostError::NotFound("no organization".into())),
            ("library", "artifact.get") if arg["id"] == "art-1" => {
                Ok(json!(Artifact { payload_hash: "fp-1".into(), ..records::artifact("art-1", body.clone()) }))
            }
            ("library", "download.get") if arg["id"] == "dl-1" => {
                let status = match s.status {
                    OrganizationStatus::Running => DownloadStatus::Importing,
                    _ => DownloadStatus::Completed,
                };
                Ok(json!(DownloadTask {
                    status,
                    progress: 1.0,
                    content_path: Some("Dune.Part.Two.2024.2160p".into()),
                    ..records::download("dl-1", "plan-1", "hash")
                }))
            }
            ("records", "organization.start") => {
                let start: OrganizationStart = serde_json::from_value(arg.clone()).unwrap();
                assert_eq!(start.id, "org-1");
                s.status = OrganizationStatus::Running;
                s.transitions.push((name.into(), arg.clone()));
                if let Some(lost) = s.lost_on_start.take() {
                    std::fs::remove_file(lost).unwrap();
                }
                Ok(organization(s.status))
            }
            ("records", "organization.finish") => {
                let finish: OrganizationFinish = serde_json::from_value(arg.clone()).unwrap();
                s.status = match finish.error {
                    Some(_) => OrganizationStatus::Failed,
                    None => OrganizationStatus::Succeeded,
                };
                s.transitions.push((name.into(), arg.clone()));
                Ok(organization(s.status))
            }
            _ => Err(HostError::NotFound(format!("{iface} {name}"))),
        }
    };
    MockHost::new("organize.execute").with_domain(handler).install();
    store
}

fn roots(downloads: &Path, library: &Path) {
    let mock = MockHost::take().unwrap();
    mock.with_root("downloads", downloads).with_root("library", library).install();
}

fn setup(mode: OrganizeMode, library_in: Option<&Path>) -> (tempfile::TempDir, tempfile::TempDir, Rc<RefCell<Store>>) {
    let downloads = tempfile::tempdir().unwrap();
    let library = match library_in {
        Some(dir) => tempfile::tempdir_in(dir).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let source = downloads.path().join(SOURCE);
    std::fs::create_dir_all(source.parent().unwrap()).unwrap();
    std::fs::write(&source, vec![42u8; 8192]).unwrap();
    let store = domain(mode, 8192);
    roots(downloads.path(), library.path());
    (downloads, library, store)
}

fn call(fingerprint: &str) -> Result<Value, Failure> {
    match invoke::<OrganizeExecute>(json!({"planId": "org-1", "fingerprint": fingerprint}))? {
        Called::Succeeded(v) => Ok(v),
        Called::Pending(v) => panic!("organizing is never pending: {v}"),
    }
}

fn verdict() -> Result<Verification<crate::ExecuteOutput>, Failure> {
    <OrganizeExecute as capstan_sdk::Capability>::verify(ExecuteInput {
        plan_id: "org-1".into(),
        fingerprint: "fp-1".into(),
    })
}

fn names(store: &Rc<RefCell<Store>>) -> Vec<String> {
    store.borrow().transitions.iter().map(|(n, _)| n.clone()).collect()
}

#[test]
fn a_hardlink_plan_links_the_file_and_finishes_the_organization() {
    let (downloads, library, store) = setup(OrganizeMode::Hardlink, None);
    let out = call("fp-1").unwrap();
    assert_eq!(out["status"], "succeeded");
    assert_eq!(
        out["items"],
        json!([{"source": SOURCE, "destination": DESTINATION, "method": "hardlink", "verified": true}])
    );
    let placed = std::fs::metadata(library.path().join(DESTINATION)).unwrap();
    assert_eq!(placed.ino(), std::fs::metadata(downloads.path().join(SOURCE)).unwrap().ino());
    assert_eq!(names(&store), ["organization.start", "organization.finish"]);
    let start: OrganizationStart = serde_json::from_value(store.borrow().transitions[0].1.clone()).unwrap();
    assert_eq!(start, OrganizationStart { id: "org-1".into(), fingerprint: "fp-1".into() });
    assert_eq!(store.borrow().status, OrganizationStatus::Succeeded);

    // Once succeeded, running it again changes nothing and says so.
    let again = call("fp-1").unwrap();
    assert_eq!(again["items"][0]["verified"], true);
    assert_eq!(names(&store).len(), 2);
    let verdict = verdict();
    assert!(matches!(verdict, Ok(Verification::Done(_))));
}

#[test]
fn a_stale_fingerprint_or_changed_download_creates_nothing() {
    let (downloads, library, store) = setup(OrganizeMode::Copy, None);
    let Err(Failure::Conflict(m)) = call("fp-old") else { panic!("expected a conflict") };
    assert!(m.contains("planned again"), "{m}");
    // A new episode, sample-sized or not, is not what was approved.
    std::fs::write(downloads.path().join("Dune.Part.Two.2024.2160p/Bonus.Cut.mkv"), vec![1u8; 8000]).unwrap();
    let Err(Failure::Conflict(m)) = call("fp-1") else { panic!("expected a conflict") };
    assert!(m.contains("appeared"), "{m}");
    std::fs::remove_file(downloads.path().join("Dune.Part.Two.2024.2160p/Bonus.Cut.mkv")).unwrap();
    std::fs::write(downloads.path().join(SOURCE), vec![42u8; 9000]).unwrap();
    let Err(Failure::Conflict(m)) = call("fp-1") else { panic!("expected a conflict") };
    assert!(m.contains("changed"), "{m}");
    assert_eq!(std::fs::read_dir(library.path()).unwrap().count(), 0);
    assert!(names(&store).is_empty(), "the organization was never started");
    let verdict = verdict();
    assert!(matches!(verdict, Ok(Verification::NotDone)));
}

#[test]
fn copies_are_verified_and_an_identical_file_counts_as_done_but_another_is_never_overwritten() {
    let (downloads, library, store) = setup(OrganizeMode::Copy, None);
    let target = library.path().join(DESTINATION);
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::write(&target, vec![7u8; 8192]).unwrap();
    let Err(Failure::Conflict(m)) = call("fp-1") else { panic!("expected a conflict") };
    assert!(m.contains("nothing was overwritten"), "{m}");
    assert_eq!(std::fs::read(&target).unwrap(), vec![7u8; 8192]);
    assert!(names(&store).is_empty());

    std::fs::remove_file(&target).unwrap();
    let out = call("fp-1").unwrap();
    assert_eq!(out["items"][0]["method"], "copy");
    assert_eq!(out["items"][0]["verified"], true);
    assert_ne!(
        std::fs::metadata(&target).unwrap().ino(),
        std::fs::metadata(downloads.path().join(SOURCE)).unwrap().ino()
    );
    assert_eq!(std::fs::read(&target).unwrap(), vec![42u8; 8192]);
    assert_eq!(names(&store), ["organization.start", "organization.finish"]);
}

#[test]
fn a_failed_placement_is_recorded_with_its_error() {
    let (downloads, library, store) = setup(OrganizeMode::Hardlink, None);
    store.borrow_mut().lost_on_start = Some(downloads.path().join(SOURCE));
    let failure = call("fp-1").unwrap_err();
    assert_eq!(names(&store), ["organization.start", "organization.finish"]);
    let finish: OrganizationFinish = serde_json::from_value(store.borrow().transitions[1].1.clone()).unwrap();
    assert_eq!(finish, OrganizationFinish { id: "org-1".into(), error: Some(failure.to_string()) });
    assert_eq!(store.borrow().status, OrganizationStatus::Failed);
    assert!(!library.path().join(DESTINATION).exists());
}

#[test]
fn an_interrupted_move_resumes_and_finishes() {
    let (downloads, library, store) = setup(OrganizeMode::Move, None);
    // An earlier attempt started, moved the file, and died before finishing.
    store.borrow_mut().status = OrganizationStatus::Running;
    let target = library.path().join(DESTINATION);
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::rename(downloads.path().join(SOURCE), &target).unwrap();
    let verdict = verdict();
    assert!(matches!(verdict, Ok(Verification::NotDone)), "a running organization is re-run to finish it");
    let out = call("fp-1").unwrap();
    assert_eq!(out["items"][0]["method"], "move");
    assert_eq!(store.borrow().status, OrganizationStatus::Succeeded);
}

#[test]
fn a_hardlink_across_devices_becomes_a_verified_copy() {
    // /dev/shm is a tmpfs on Linux, a different device from the temp dir.
    let shm = Path::new("/dev/shm");
    let other_device =
        shm.is_dir() && std::fs::metadata(shm).unwrap().dev() != std::fs::metadata(std::env::temp_dir()).unwrap().dev();
    if !other_device {
        eprintln!("skipped: no second file system to link across");
        return;
    }
    let (downloads, library, _store) = setup(OrganizeMode::Hardlink, Some(shm));
    let out = call("fp-1").unwrap();
    assert_eq!(out["items"][0]["method"], "copy");
    assert_eq!(out["items"][0]["verified"], true);
    let placed = std::fs::metadata(library.path().join(DESTINATION)).unwrap();
    assert_ne!(placed.dev(), std::fs::metadata(downloads.path().join(SOURCE)).unwrap().dev());
}

#[test]
fn the_descriptor_is_an_execute_step_on_organization_plans() {
    let d = descriptor::<OrganizeExecute>();
    assert_eq!(d.id, "organize.execute");
    for tag in ["organize", "policy.library", "plan:organization"] {
        assert!(d.tags.iter().any(|t| t == tag), "{tag}");
    }
    for alias in ["organize", "import", "整理", "入库"] {
        assert!(d.aliases.iter().any(|a| a == alias), "{alias}");
    }
    assert!(d.input_schema.contains("planId") && d.input_schema.contains("fingerprint"));
}
