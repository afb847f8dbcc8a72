//! Native tests through the SDK's mock host: real files in temporary
//! `downloads`, `library` and `recycle` folders, a small stateful domain
//! store, and what a user would notice — the better file in the library,
//! the old one kept in the recycle folder, and nothing overwritten or lost.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use capstan_organize::carry::{CarryInput, Carrying, invoke as carry};
use capstan_sdk::contract::ops::transitions::OrganizationFinish;
use capstan_sdk::contract::records::{Artifact, DownloadTask, Organization};
use capstan_sdk::contract::status::{DownloadStatus, OrganizationStatus, OrganizeMode};
use capstan_sdk::testing::{Called, MockHost, descriptor, invoke, records};
use capstan_sdk::{Failure, HostError};
use serde_json::{Value, json};

use crate::OrganizeReplace;

const SOURCE: &str = "Film.2024.1080p/Film.2024.1080p.mkv";
const NEW: &str = "Film (2024)/Film (2024) WEBDL-1080p.mkv";
const OLD: &str = "Film (2024)/Film (2024) WEBDL-720p.mkv";

struct Store {
    status: OrganizationStatus,
    transitions: Vec<(String, Value)>,
}

struct Folders {
    downloads: tempfile::TempDir,
    library: tempfile::TempDir,
    recycle: tempfile::TempDir,
    store: Rc<RefCell<Store>>,
}

/// An organization placing the 1080p download at `destination`, replacing
/// `replaces` (none: an ordinary import); the library holds the 720p file
/// at `OLD`.
fn setup(destination: &str, replaces: &[&str], with_recycle: bool) -> Folders {
    let store = Rc::new(RefCell::new(Store { status: OrganizationStatus::Planned, transitions: Vec::new() }));
    let state = store.clone();
    let items = json!([{"source": SOURCE, "destination": destination, "size": 8192, "replaces": replaces}]);
    let body = json!({"downloadTaskId": "dl-1", "mode": "copy", "items": items});
    let replacing = !replaces.is_empty();
    let organization = move |status: OrganizationStatus| {
        json!(Organization {
            plan_artifact_id: "art-1".into(),
            mode: OrganizeMode::Copy,
            status,
            replaces: replacing,
            ..records::organization("org-1", "dl-1", items.clone())
        })
    };
    let handler = move |iface: &str, name: &str, arg: &Value| -> Result<Value, HostError> {
        let mut s = state.borrow_mut();
        match (iface, name) {
            ("library", "organization.get") => Ok(organization(s.status)),
            ("library", "artifact.get") => {
                Ok(json!(Artifact { payload_hash: "fp-1".into(), ..records::artifact("art-1", body.clone()) }))
            }
            ("library", "download.get") => {
                let status = match s.status {
                    OrganizationStatus::Running => DownloadStatus::Importing,
                    _ => DownloadStatus::Completed,
                };
                Ok(json!(DownloadTask {
                    status,
                    progress: 1.0,
                    content_path: Some("Film.2024.1080p".into()),
                    ..records::download("dl-1", "plan-1", "hash")
                }))
            }
            ("records", "organization.start") => {
                s.status = OrganizationStatus::Running;
                s.transitions.push((name.into(), arg.clone()));
                Ok(organization(s.status))
            }
            ("records", "organization.finish") => {
                let finish: OrganizationFinish = serde_json::from_value(arg.clone()).unwrap();
                s.status =
                    if finish.error.is_some() { OrganizationStatus::Failed } else { OrganizationStatus::Succeeded };
                s.transitions.push((name.into(), arg.clone()));
                Ok(organization(s.status))
            }
            _ => Err(HostError::NotFound(format!("{iface} {name}"))),
        }
    };
    let (downloads, library, recycle) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write(&downloads.path().join(SOURCE), 42);
    write(&library.path().join(OLD), 7);
    let mut mock = MockHost::new("organize.replace")
        .with_domain(handler)
        .with_root("downloads", downloads.path())
        .with_root("library", library.path());
    if with_recycle {
        mock = mock.with_root("recycle", recycle.path());
    }
    mock.install();
    Folders { downloads, library, recycle, store }
}

fn write(path: &Path, byte: u8) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, vec![byte; 8192]).unwrap();
}

fn call() -> Result<Value, Failure> {
    match invoke::<OrganizeReplace>(json!({"planId": "org-1", "fingerprint": "fp-1"}))? {
        Called::Succeeded(v) => Ok(v),
        Called::Pending(v) => panic!("organizing is never pending: {v}"),
    }
}

fn content(path: &Path) -> Option<u8> {
    std::fs::read(path).ok().map(|bytes| bytes[0])
}

#[test]
fn an_upgrade_places_the_better_file_and_keeps_the_old_one_in_the_recycle_folder() {
    let f = setup(NEW, &[OLD], true);
    let out = call().unwrap();
    assert_eq!(content(&f.library.path().join(NEW)), Some(42));
    assert_eq!(content(&f.library.path().join(OLD)), None, "the 720p file left the library");
    let kept = f.recycle.path().join("org-1").join(OLD);
    assert_eq!(content(&kept), Some(7), "and is kept, not deleted");
    assert_eq!(out["recycled"], json!([{"file": OLD, "keptAs": format!("org-1/{OLD}")}]));
    assert_eq!(f.store.borrow().status, OrganizationStatus::Succeeded);

    // Running it again moves nothing and says the same.
    write(&f.library.path().join(OLD), 9);
    let again = call().unwrap();
    assert_eq!(again["recycled"], out["recycled"]);
    assert_eq!(content(&f.library.path().join(OLD)), Some(9), "a file put back later is left alone");
    assert_eq!(f.store.borrow().transitions.len(), 2);
}

#[test]
fn a_replacement_at_the_same_path_keeps_the_old_file_first() {
    let f = setup(OLD, &[OLD], true);
    call().unwrap();
    assert_eq!(content(&f.library.path().join(OLD)), Some(42));
    assert_eq!(content(&f.recycle.path().join("org-1").join(OLD)), Some(7));
}

#[test]
fn a_run_again_after_an_interruption_never_takes_the_new_file_for_the_old_one() {
    let f = setup(OLD, &[OLD], true);
    // An earlier attempt kept the old file, placed the new one, and died
    // before finishing.
    let kept = f.recycle.path().join("org-1").join(OLD);
    std::fs::create_dir_all(kept.parent().unwrap()).unwrap();
    std::fs::rename(f.library.path().join(OLD), &kept).unwrap();
    write(&f.library.path().join(OLD), 42);
    f.store.borrow_mut().status = OrganizationStatus::Running;
    let out = call().unwrap();
    assert_eq!(content(&f.library.path().join(OLD)), Some(42), "the new file stays in the library");
    assert_eq!(content(&kept), Some(7));
    assert_eq!(out["recycled"], json!([{"file": OLD, "keptAs": format!("org-1/{OLD}")}]));
    assert_eq!(f.store.borrow().status, OrganizationStatus::Succeeded);
}

#[test]
fn a_file_the_plan_does_not_replace_is_never_touched() {
    // The plan replaces OLD, but another file sits where the new one goes.
    let f = setup(NEW, &[OLD], true);
    write(&f.library.path().join(NEW), 3);
    let Err(Failure::Conflict(m)) = call() else { panic!("expected a conflict") };
    assert!(m.contains("nothing was overwritten"), "{m}");
    assert_eq!(content(&f.library.path().join(NEW)), Some(3));
    assert_eq!(content(&f.library.path().join(OLD)), Some(7));
    assert!(f.store.borrow().transitions.is_empty(), "the organization was never started");
}

#[test]
fn without_a_recycle_folder_nothing_is_replaced_and_the_failure_says_why() {
    let f = setup(OLD, &[OLD], false);
    let failure = call().unwrap_err();
    assert!(failure.to_string().contains("no recycle folder"), "{failure}");
    assert_eq!(content(&f.library.path().join(OLD)), Some(7), "the held file stays where it was");
    assert_eq!(f.store.borrow().status, OrganizationStatus::Failed);
    assert!(f.downloads.path().join(SOURCE).exists());
}

#[test]
fn each_capability_carries_out_only_its_own_kind_of_organization() {
    let _f = setup(NEW, &[], true);
    let Err(Failure::Conflict(m)) = call() else { panic!("an import that replaces nothing is refused") };
    assert!(m.contains("organize.execute"), "{m}");
    let _f = setup(NEW, &[OLD], true);
    let input = CarryInput { plan_id: "org-1".into(), fingerprint: "fp-1".into() };
    let Err(Failure::Conflict(m)) = carry(&input, Carrying::Placing) else { panic!("an upgrade is refused") };
    assert!(m.contains("organize.replace"), "{m}");
}

#[test]
fn the_descriptor_is_an_execute_step_on_replacement_plans() {
    let d = descriptor::<OrganizeReplace>();
    assert_eq!(d.id, "organize.replace");
    for tag in ["plan:replacement", "policy.library", "upgrade"] {
        assert!(d.tags.iter().any(|t| t == tag), "{tag}");
    }
    assert!(!d.tags.iter().any(|t| t == "plan:organization"));
}
