//! The skills folder as an operator changes it.

use std::fs;

use super::*;

fn loaded(tool: &str) -> bool {
    [
        "inventory.query",
        "download.status",
        "task.inspect",
        "task.retry",
        "download.recheck",
        "organize.plan",
        "release.search",
        "release.inspect",
    ]
    .contains(&tool)
}

fn write(dir: &Path, folder: &str, text: &str) {
    fs::create_dir_all(dir.join(folder)).unwrap();
    fs::write(dir.join(folder).join("SKILL.md"), text).unwrap();
}

fn skill(name: &str, tools: &str) -> String {
    format!("---\nname: {name}\ndescription: What {name} is for\ntools: [{tools}]\n---\nDo it.\n")
}

fn reasons(set: &SkillSet) -> Vec<(String, String)> {
    set.refused.iter().map(|r| (r.folder.clone(), r.reason.clone())).collect()
}

#[test]
fn the_built_ins_are_ready_with_nothing_dropped_in() {
    let dir = tempfile::tempdir().unwrap();
    let set = Skills::new(dir.path().join("absent")).current_with(&loaded);
    let names: Vec<&str> = set.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["download-not-in-library", "failed-import", "stuck-download", "wanted-not-fetched"]);
    // Each kind an investigation may need a playbook for has one.
    for kind in crate::domain::INVESTIGABLE.iter().chain(crate::domain::WITH_PLAYBOOK) {
        if *kind != "identity_ambiguous" {
            assert!(playbook_for(&set, kind).is_some(), "a playbook for {kind}");
        }
    }
    assert_eq!(playbook_for(&set, "download_stalled").unwrap().name, "stuck-download");
    assert!(set.refused.is_empty(), "{:?}", reasons(&set));
    assert!(set.skills.iter().all(|s| s.source == SkillSource::BuiltIn));
}

#[test]
fn dropped_in_skills_are_read_refused_with_a_reason_and_read_again_when_changed() {
    let dir = tempfile::tempdir().unwrap();
    let skills = Skills::new(dir.path().to_path_buf());
    write(dir.path(), "check-disk", &skill("check-disk", "task.inspect"));
    write(dir.path(), "misnamed", &skill("other-name", "task.inspect"));
    write(dir.path(), "failed-import", &skill("failed-import", "task.inspect"));
    write(dir.path(), "needs-more", &skill("needs-more", "task.inspect, files.erase"));
    write(dir.path(), "loose", "no front matter");
    fs::create_dir_all(dir.path().join("empty")).unwrap();
    write(dir.path(), "big", &"x".repeat(MAX_SKILL_BYTES as usize + 1));
    std::os::unix::fs::symlink(dir.path().join("check-disk/SKILL.md"), dir.path().join("empty/SKILL.md")).unwrap();
    fs::write(dir.path().join("loose.md"), skill("loose-md", "task.inspect")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("check-disk"), dir.path().join("linked")).unwrap();
    fs::write(dir.path().join(".hidden"), "").unwrap();

    let set = skills.current_with(&loaded);
    assert!(set.get("check-disk").is_some());
    let reasons = reasons(&set);
    let said = |folder: &str, words: &str| {
        let (_, reason) = reasons.iter().find(|(f, _)| f == folder).unwrap_or_else(|| panic!("{folder}: {reasons:?}"));
        assert!(reason.contains(words), "{folder}: {reason}");
    };
    said("misnamed", "its folder is \"misnamed\"");
    said("failed-import", "a built-in skill is named failed-import");
    said("needs-more", "not loaded: files.erase");
    said("loose", "starts with a line `---`");
    said("empty", "not a regular file");
    said("big", "at most 65536");
    said("loose.md", "not a folder: a skill is a folder holding a SKILL.md");
    said("linked", "a link, which is not followed");
    assert_eq!(reasons.len(), 8, "{reasons:?}");

    // Fixed on disk: the next listing has it.
    write(dir.path(), "needs-more", &skill("needs-more", "task.inspect, task.retry"));
    let set = skills.current_with(&loaded);
    assert_eq!(set.get("needs-more").unwrap().tools, ["task.inspect", "task.retry"]);
    // Removed: gone.
    fs::remove_dir_all(dir.path().join("check-disk")).unwrap();
    assert!(skills.current_with(&loaded).get("check-disk").is_none());
}

#[test]
fn a_tool_that_stops_being_loaded_refuses_the_skill_until_it_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let skills = Skills::new(dir.path().to_path_buf());
    write(dir.path(), "fetch-help", &skill("fetch-help", "release.search"));
    assert!(skills.current_with(&loaded).get("fetch-help").is_some());
    let without_search = |tool: &str| tool != "release.search" && loaded(tool);
    let set = skills.current_with(&without_search);
    assert!(set.get("fetch-help").is_none());
    // The built-in that lists it is refused too, and says why.
    assert!(set.refused.iter().any(|r| r.folder == "wanted-not-fetched" && r.reason.contains("release.search")));
    assert!(skills.current_with(&loaded).get("fetch-help").is_some());
}
