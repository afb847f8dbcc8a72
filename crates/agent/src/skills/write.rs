//! Writing a skill into the skills folder, as the console does: the text is
//! checked exactly as a listing would check it before anything touches the
//! disk, and lands whole or not at all — written to a hidden file beside
//! it, flushed, then renamed over `SKILL.md` — so a listing never reads
//! half a skill and a failed write leaves the previous one as it was. A new
//! skill claims its folder by creating it, so two writers of one new name
//! cannot both create it; replacing one is asked for by name.

use super::{MAX_SKILLS, Skill, SkillSource, Skills, accept, built_ins, parse};
use crate::runtime::Snapshot;

/// Why a skill was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The text, or the name it is written under, is not a skill that
    /// could be read: the reason, as a listing would give it.
    #[error("{0}")]
    Refused(String),
    /// A skill folder of that name exists and replacing it was not asked
    /// for, or a built-in has the name.
    #[error("{0}")]
    Taken(String),
    #[error("the skill could not be written: {0}")]
    Io(#[from] std::io::Error),
}

impl Skills {
    /// Writes `text` as the `SKILL.md` of skill `name`, checked against
    /// what `snapshot` has loaded; `replace` lets it take the place of the
    /// skill folder of that name. Answers the skill as a run will read it,
    /// and whether its folder is new.
    pub fn write(
        &self,
        name: &str,
        text: &str,
        replace: bool,
        snapshot: &Snapshot,
    ) -> Result<(Skill, bool), WriteError> {
        self.write_with(name, text, replace, &|tool| snapshot.get(tool).is_some())
    }

    /// [`Skills::write`], with `loaded` saying whether a tool is loaded.
    pub(super) fn write_with(
        &self,
        name: &str,
        text: &str,
        replace: bool,
        loaded: &dyn Fn(&str) -> bool,
    ) -> Result<(Skill, bool), WriteError> {
        parse::check_name(name).map_err(WriteError::Refused)?;
        if text.len() as u64 > parse::MAX_SKILL_BYTES {
            return Err(WriteError::Refused(format!(
                "SKILL.md is {} bytes; at most {}",
                text.len(),
                parse::MAX_SKILL_BYTES
            )));
        }
        let built_in = built_ins(loaded);
        if built_in.get(name).is_some() || built_in.refused.iter().any(|r| r.folder == name) {
            return Err(WriteError::Taken(format!("a built-in skill is named {name}; choose another name")));
        }
        let folder = self.dir.join(name);
        let file = folder.join("SKILL.md");
        let source = SkillSource::Directory { path: file.clone() };
        let written = parse::parse(text, &super::DECISION_KINDS);
        let skill = accept(&built_in, name, &source, written, loaded).map_err(WriteError::Refused)?;
        std::fs::create_dir_all(&self.dir)?;
        let created = match std::fs::create_dir(&folder) {
            Ok(()) => {
                if self.folder_count()? > MAX_SKILLS {
                    let _ = std::fs::remove_dir(&folder);
                    return Err(WriteError::Refused(format!(
                        "the skills folder holds {MAX_SKILLS} skills already; remove one first"
                    )));
                }
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let meta = std::fs::symlink_metadata(&folder)?;
                if !meta.is_dir() {
                    return Err(WriteError::Taken(format!(
                        "{} is not a folder; move it away to write a skill named {name}",
                        folder.display()
                    )));
                }
                if !replace {
                    return Err(WriteError::Taken(format!(
                        "a skill folder named {name} exists; ask to replace it, or choose another name"
                    )));
                }
                false
            }
            Err(e) => return Err(e.into()),
        };
        if let Err(e) = capstan_foundation::files::write_whole(&file, text.as_bytes()) {
            if created {
                let _ = std::fs::remove_dir(&folder);
            }
            return Err(e.into());
        }
        Ok((skill, created))
    }

    /// How many folders the skills folder holds (hidden ones aside), as a
    /// listing counts them.
    fn folder_count(&self) -> std::io::Result<usize> {
        let mut n = 0;
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() && !entry.file_name().to_string_lossy().starts_with('.') {
                n += 1;
            }
        }
        Ok(n)
    }
}
