//! Native tests through the SDK's mock host: real files in temporary
//! `downloads` and `library` folders, a small stateful domain store, and
//! what a user would notice — the library file, how it got there, the
//! organization's state, and that nothing is overwritten.

use std::cell::RefCell;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::rc::Rc;

use capstan_sdk::testing::{Called, MockHost, descriptor, invoke};
use capstan_sdk::{Failure, HostError, Verification};
use serde_json::{Value, json};

use crate::{ExecuteInput, OrganizeExecute};

const SOURCE: &str = "Dune.Part.Two.2024.2160p/Dune.Part.Two.2024.2160p.mkv";
const DESTINATION: &str = "Dune - Part Two (2024)/Dune - Part Two (2024) Bluray-2160p.mkv";

/// The store's state: organization status and every transition applied.
#[derive(Default)]
struct Store {
    status: String,
    transitions: Vec<(String, Value)>,
}

fn domain(mode: &str, size: u64) -> Rc<RefCell<Store>> {
    let store = Rc::new(RefCell::new(Store { status: "planned".into(), ..Store::default() }));
    let state = store.clone();
    let mode = mode.to_string();
    let handler = move |iface: &str, name: &str, arg: &Value| -> Result<Value, HostError> {
        let mut s = state.borrow_mut();
        match (iface, name) {
            ("library", "organization.get") if arg["id"] == "org-1" => Ok(json!({
                "id": "org-1", "planArtifactId": "art-1", "status": s.status, "revision": 1, "downloadTaskId": "dl-1"})),
            ("library", "organization.get") => Err(HostError::NotFound("no organization".into())),
            ("library", "artifact.get") => Ok(json!({"id": "art-1", "payloadHash": "fp-1", "body": {
                "downloadTaskId": "dl-1", "mode": mode,
                "items": [{"source": SOURCE, "destination": DESTINATION, "size": size}]}})),
            ("library", "download.get") => {
                let status = if s.status == "running" { "importing" } else { "completed" };
                Ok(json!({"id": "dl-1", "status": status, "contentPath": "Dune.Part.Two.2024.2160p"}))
            }
            ("records", "organization.start") => {
                s.status = "running".into();
                s.transitions.push((name.into(), arg.clone()));
                Ok(json!({"id": "org-1", "status": "running"}))
            }
            ("records", "organization.finish") => {
                s.status = if arg.get("error").is_some() { "failed" } else { "succeeded" }.into();
                s.transitions.push((name.into(), arg.clone()));
                Ok(json!({"id": "org-1", "status": s.status}))
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

fn setup(mode: &str, library_in: Option<&Path>) -> (tempfile::TempDir, tempfile::TempDir, Rc<RefCell<Store>>) {
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
    let (downloads, library, store) = setup("hardlink", None);
    let out = call("fp-1").unwrap();
    assert_eq!(out["status"], "succeeded");
    assert_eq!(
        out["items"],
        json!([{"source": SOURCE, "destination": DESTINATION, "method": "hardlink", "verified": true}])
    );
    let placed = std::fs::metadata(library.path().join(DESTINATION)).unwrap();
    assert_eq!(placed.ino(), std::fs::metadata(downloads.path().join(SOURCE)).unwrap().ino());
    assert_eq!(names(&store), ["organization.start", "organization.finish"]);
    assert_eq!(store.borrow().transitions[0].1, json!({"id": "org-1", "fingerprint": "fp-1"}));

    // Once succeeded, running it again changes nothing and says so.
    let again = call("fp-1").unwrap();
    assert_eq!(again["items"][0]["verified"], true);
    assert_eq!(names(&store).len(), 2);
    let verdict = verdict();
    assert!(matches!(verdict, Ok(Verification::Done(_))));
}

#[test]
fn a_stale_fingerprint_or_changed_download_creates_nothing() {
    let (downloads, library, store) = setup("copy", None);
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
    let (downloads, library, store) = setup("copy", None);
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
fn an_interrupted_move_resumes_and_finishes() {
    let (downloads, library, store) = setup("move", None);
    // An earlier attempt started, moved the file, and died before finishing.
    store.borrow_mut().status = "running".into();
    let target = library.path().join(DESTINATION);
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::rename(downloads.path().join(SOURCE), &target).unwrap();
    let verdict = verdict();
    assert!(matches!(verdict, Ok(Verification::NotDone)), "a running organization is re-run to finish it");
    let out = call("fp-1").unwrap();
    assert_eq!(out["items"][0]["method"], "move");
    assert_eq!(store.borrow().status, "succeeded");
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
    let (downloads, library, _store) = setup("hardlink", Some(shm));
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
