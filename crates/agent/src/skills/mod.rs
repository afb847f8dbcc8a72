//! Skills: playbooks an agent run reads when it needs them. A skill is a
//! folder holding a `SKILL.md` ([`parse`]): a name, a one-line description,
//! the capabilities it uses (`tools`), the decision kinds it is the
//! playbook for (`triggers`), and Markdown instructions. A few ship with
//! Capstan ([`BUILT_IN`]); operators drop more into the skills folder
//! (`skills_dir`, default `<data>/skills`), which is read again whenever a
//! file in it changes.
//!
//! A skill carries know-how, never authority: its `tools` bound what it
//! leads a run to, and a run still calls only what its own mode and
//! allowlist permit. A skill is refused, with the reason, when its file
//! is malformed or too large, when its name is not its folder's or is
//! taken, or when a tool it lists is not loaded now.

pub mod parse;
mod write;

pub use write::WriteError;

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::SystemTime;

use serde::Serialize;

use crate::runtime::Snapshot;
use parse::{MAX_SKILL_BYTES, Written};

/// The skills that ship with Capstan: their folder names and `SKILL.md`s.
pub const BUILT_IN: &[(&str, &str)] = &[
    ("download-not-in-library", include_str!("../../skills/download-not-in-library/SKILL.md")),
    ("failed-import", include_str!("../../skills/failed-import/SKILL.md")),
    ("stuck-download", include_str!("../../skills/stuck-download/SKILL.md")),
    ("wanted-not-fetched", include_str!("../../skills/wanted-not-fetched/SKILL.md")),
];

/// Most skill folders read from the skills folder; the rest are refused.
pub const MAX_SKILLS: usize = 200;

/// Where a skill came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum SkillSource {
    /// Shipped with Capstan.
    BuiltIn,
    /// A `SKILL.md` in the skills folder.
    Directory {
        #[schema(value_type = String)]
        path: PathBuf,
    },
}

/// A skill a run may read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Skill {
    pub name: String,
    /// One line: what the skill is for.
    pub description: String,
    /// The capabilities its instructions use: an upper bound on what it
    /// leads a run to, not a grant.
    pub tools: Vec<String>,
    /// Decision kinds it is the playbook for.
    pub triggers: Vec<String>,
    /// The Markdown a run reads.
    pub instructions: String,
    pub source: SkillSource,
}

/// A skill folder that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefusedSkill {
    /// The folder's name (or the built-in's).
    pub folder: String,
    pub source: SkillSource,
    pub reason: String,
}

/// Every skill as it stands now.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct SkillSet {
    /// The skills a run may read, built-ins first, then by name.
    #[schema(value_type = Vec<Skill>)]
    pub skills: Vec<Arc<Skill>>,
    pub refused: Vec<RefusedSkill>,
}

impl SkillSet {
    pub fn get(&self, name: &str) -> Option<&Arc<Skill>> {
        self.skills.iter().find(|s| s.name == name)
    }
}

/// The decision kinds a skill's `triggers` may name: those an
/// investigation may start for (not `agent_budget`, which a run cannot
/// spend its way out of).
pub static DECISION_KINDS: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| crate::domain::INVESTIGABLE.iter().chain(crate::domain::WITH_PLAYBOOK).copied().collect());

/// The skill that is the playbook for decisions of `kind`: the first in
/// the set's order (built-ins first, then by name) naming it in
/// `triggers`.
pub fn playbook_for<'a>(set: &'a SkillSet, kind: &str) -> Option<&'a Arc<Skill>> {
    set.skills.iter().find(|s| s.triggers.iter().any(|t| t == kind))
}

/// The built-in skills as their files say, read once.
static BUILT_IN_WRITTEN: LazyLock<Vec<(&'static str, Result<Written, String>)>> =
    LazyLock::new(|| BUILT_IN.iter().map(|(folder, text)| (*folder, parse::parse(text, &DECISION_KINDS))).collect());

/// One folder's `SKILL.md` as read: its file, when it last changed and how
/// large it is, and what it said.
#[derive(Debug, Clone)]
struct Read {
    folder: String,
    stamp: Option<(SystemTime, u64)>,
    written: Result<Written, String>,
    path: PathBuf,
}

/// The skills folder and what was read from it last.
pub struct Skills {
    dir: PathBuf,
    last: Mutex<Vec<Read>>,
}

impl Skills {
    pub fn new(dir: PathBuf) -> Skills {
        Skills { dir, last: Mutex::new(Vec::new()) }
    }

    /// Every skill now: the built-ins and the folder's, each checked
    /// against what `snapshot` has loaded. A `SKILL.md` is read again only
    /// when its size or modification time changed.
    pub fn current(&self, snapshot: &Snapshot) -> SkillSet {
        self.current_with(&|tool| snapshot.get(tool).is_some())
    }

    /// [`Skills::current`], with `loaded` saying whether a tool is loaded.
    fn current_with(&self, loaded: &dyn Fn(&str) -> bool) -> SkillSet {
        let mut set = built_ins(loaded);
        for read in self.read_folder() {
            let source = SkillSource::Directory { path: read.path };
            match accept(&set, &read.folder, &source, read.written, loaded) {
                Ok(skill) => set.skills.push(Arc::new(skill)),
                Err(reason) => set.refused.push(RefusedSkill { folder: read.folder, source, reason }),
            }
        }
        set.refused.sort_by(|a, b| a.folder.cmp(&b.folder));
        set
    }

    /// The folder's skills, reading only what changed since the last call.
    fn read_folder(&self) -> Vec<Read> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let mut now = Vec::new();
        // Every entry but hidden ones: a folder is a skill; anything else
        // is listed as refused, so a SKILL.md dropped loose or a link is
        // not silently ignored.
        let mut folders: Vec<(String, PathBuf, Option<String>)> = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .map(|e| {
                    let kind = e.file_type().ok();
                    let not_a_folder = match kind {
                        Some(t) if t.is_dir() => None,
                        Some(t) if t.is_symlink() => {
                            Some("a link, which is not followed: make it a folder".to_string())
                        }
                        _ => Some("not a folder: a skill is a folder holding a SKILL.md".to_string()),
                    };
                    (e.file_name().to_string_lossy().into_owned(), e.path(), not_a_folder)
                })
                .filter(|(name, _, _)| !name.starts_with('.'))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                let reason = Some(format!("the skills folder {} cannot be read: {e}", self.dir.display()));
                vec![(self.dir.display().to_string(), self.dir.clone(), reason)]
            }
        };
        folders.sort();
        let mut read_folders = 0;
        for (folder, path, not_a_folder) in folders {
            if let Some(reason) = not_a_folder {
                now.push(Read { folder, stamp: None, written: Err(reason), path });
                continue;
            }
            let file = path.join("SKILL.md");
            read_folders += 1;
            if read_folders > MAX_SKILLS {
                let written = Err(format!("more than {MAX_SKILLS} skill folders; this one is not read"));
                now.push(Read { folder, stamp: None, written, path: file });
                continue;
            }
            let stamp = stamp_of(&file);
            let unchanged = stamp.as_ref().ok().copied();
            let kept = last.iter().find(|r| r.folder == folder && unchanged.is_some() && r.stamp == unchanged);
            let read = match (kept, stamp) {
                (Some(kept), _) => kept.clone(),
                (None, Ok(stamp)) => Read { folder, stamp: Some(stamp), written: read_skill(&file), path: file },
                (None, Err(reason)) => Read { folder, stamp: None, written: Err(reason), path: file },
            };
            now.push(read);
        }
        *last = now.clone();
        now
    }
}

/// The built-in skills, each checked against what `loaded` says is loaded.
fn built_ins(loaded: &dyn Fn(&str) -> bool) -> SkillSet {
    let mut set = SkillSet::default();
    for (folder, written) in BUILT_IN_WRITTEN.iter() {
        match accept(&set, folder, &SkillSource::BuiltIn, written.clone(), loaded) {
            Ok(skill) => set.skills.push(Arc::new(skill)),
            Err(reason) => {
                set.refused.push(RefusedSkill { folder: folder.to_string(), source: SkillSource::BuiltIn, reason })
            }
        }
    }
    set
}

/// Checks one skill folder, or its `SKILL.md`, as the skills folder's
/// listing would: its file, its name beside the built-ins', and its tools
/// against what `snapshot` has loaded.
pub fn check(path: &Path, snapshot: &Snapshot) -> Result<Skill, String> {
    let (folder, file) = if path.is_dir() {
        (path.to_path_buf(), path.join("SKILL.md"))
    } else {
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        (parent.to_path_buf(), path.to_path_buf())
    };
    let name = std::fs::canonicalize(&folder).unwrap_or(folder);
    let name = name.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    stamp_of(&file)?;
    let loaded = |tool: &str| snapshot.get(tool).is_some();
    let source = SkillSource::Directory { path: file.clone() };
    accept(&built_ins(&loaded), &name, &source, read_skill(&file), &loaded)
}

/// When `file` last changed and its size; an error for a file that is
/// missing, not a regular file (a link is not followed) or too large.
fn stamp_of(file: &Path) -> Result<(SystemTime, u64), String> {
    let meta = std::fs::symlink_metadata(file).map_err(|_| "the folder has no SKILL.md".to_string())?;
    if !meta.file_type().is_file() {
        return Err("SKILL.md is not a regular file (links are not followed)".into());
    }
    if meta.len() > MAX_SKILL_BYTES {
        return Err(format!("SKILL.md is {} bytes; at most {MAX_SKILL_BYTES}", meta.len()));
    }
    Ok((meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), meta.len()))
}

/// Reads and parses one `SKILL.md` (a regular file within the cap, read
/// without blocking on whatever was swapped in since it was listed).
fn read_skill(file: &Path) -> Result<Written, String> {
    let bytes =
        crate::files::read_regular(file, MAX_SKILL_BYTES, "a SKILL.md").map_err(|e| format!("SKILL.md: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| "SKILL.md is not UTF-8 text".to_string())?;
    parse::parse(&text, &DECISION_KINDS)
}

/// The skill `written` in `folder` makes, or why it is refused beside the
/// skills `set` already has.
fn accept(
    set: &SkillSet,
    folder: &str,
    source: &SkillSource,
    written: Result<Written, String>,
    loaded: &dyn Fn(&str) -> bool,
) -> Result<Skill, String> {
    let written = written?;
    if written.name != folder {
        return Err(format!("its name is {:?}, but its folder is {folder:?}; they must be the same", written.name));
    }
    if let Some(taken) = set.get(&written.name) {
        let by = match taken.source {
            SkillSource::BuiltIn => "a built-in skill",
            SkillSource::Directory { .. } => "another skill",
        };
        return Err(format!("{by} is named {}", written.name));
    }
    let missing: Vec<&str> = written.tools.iter().filter(|t| !loaded(t)).map(String::as_str).collect();
    if !missing.is_empty() {
        return Err(format!(
            "it lists tools that are not loaded: {}; load them, or take them off its tools",
            missing.join(", ")
        ));
    }
    let Written { name, description, tools, triggers, instructions } = written;
    Ok(Skill { name, description, tools, triggers, instructions, source: source.clone() })
}

#[cfg(test)]
mod tests;
