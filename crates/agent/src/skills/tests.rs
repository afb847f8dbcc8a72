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
        "download.replace",
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

#[test]
fn a_written_skill_lands_whole_and_a_refused_one_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let skills = Skills::new(dir.path().join("skills"));
    let text = skill("check-disk", "task.inspect");
    let (written, created) = skills.write_with("check-disk", &text, false, &loaded).unwrap();
    assert_eq!((written.tools, created), (vec!["task.inspect".to_string()], true));
    let file = dir.path().join("skills/check-disk/SKILL.md");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    assert!(skills.current_with(&loaded).get("check-disk").is_some(), "the next listing reads it");

    // Written again: refused unless replacing is asked for.
    let other = skill("check-disk", "inventory.query");
    let taken = skills.write_with("check-disk", &other, false, &loaded).unwrap_err();
    assert!(matches!(taken, WriteError::Taken(_)) && taken.to_string().contains("exists"), "{taken}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text, "the first stays");
    assert!(!skills.write_with("check-disk", &other, true, &loaded).unwrap().1, "replaced, not created");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), other);

    // What a listing would refuse is refused before the disk is touched.
    let refusals = [
        ("check-disk", skill("check-disk", "files.erase"), "not loaded: files.erase"),
        ("check-disk", "no front matter".to_string(), "front matter"),
        ("check-disk", skill("another", "task.inspect"), "its folder is"),
        ("../escape", skill("escape", "task.inspect"), "lowercase letters"),
        ("failed-import", skill("failed-import", "task.inspect"), "a built-in skill is named failed-import"),
        ("big", format!("{}\n{}", skill("big", "task.inspect"), "x".repeat(70_000)), "at most 65536"),
    ];
    for (name, text, why) in refusals {
        let refused = skills.write_with(name, &text, true, &loaded).unwrap_err();
        assert!(refused.to_string().contains(why), "{name}: {refused}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), other, "nothing refused was written");
    let entries: Vec<String> = std::fs::read_dir(dir.path().join("skills"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, ["check-disk"], "no folder was left behind");
    assert!(!dir.path().join("escape").exists());
    let leftovers = std::fs::read_dir(dir.path().join("skills/check-disk")).unwrap().count();
    assert_eq!(leftovers, 1, "no temporary file is left");
}
