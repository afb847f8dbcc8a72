//! Reading one `SKILL.md`: YAML front matter between two `---` lines
//! (`name`, `description`, `tools`, and optionally `triggers`; no other
//! key), then the Markdown instructions. What can be checked from the
//! file alone is checked here; whether its tools are loaded is checked
//! against the runtime's snapshot when the skills are listed.

use serde::Deserialize;

/// Largest `SKILL.md` read, in bytes.
pub const MAX_SKILL_BYTES: u64 = 64 * 1024;
/// Longest name: lowercase letters, digits and hyphens.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description, which every run's system prompt carries.
pub const MAX_DESCRIPTION_CHARS: usize = 300;
/// Most capabilities one skill may list.
pub const MAX_TOOLS: usize = 32;
/// Most decision kinds one skill may be the playbook for.
pub const MAX_TRIGGERS: usize = 8;

/// The front matter as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    name: String,
    description: String,
    tools: Vec<String>,
    #[serde(default)]
    triggers: Vec<String>,
}

/// A skill as its file says, before its tools are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub name: String,
    pub description: String,
    pub tools: Vec<String>,
    pub triggers: Vec<String>,
    pub instructions: String,
}

/// Reads `text`, a whole `SKILL.md`. `kinds` are the decision kinds a
/// trigger may name. The error says what is wrong and how to put it right.
pub fn parse(text: &str, kinds: &[&str]) -> Result<Written, String> {
    let (front, body) = split(text)?;
    let front: FrontMatter =
        serde_yaml_ng::from_str(front).map_err(|e| format!("the front matter cannot be read: {e}"))?;
    let name = front.name.trim().to_string();
    check_name(&name)?;
    let description = front.description.trim().to_string();
    if description.is_empty() {
        return Err("description is empty: say in one line what the skill is for".into());
    }
    if description.contains('\n') {
        return Err("description must be one line".into());
    }
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(format!("description is longer than {MAX_DESCRIPTION_CHARS} characters"));
    }
    let tools = distinct("tools", front.tools, MAX_TOOLS)?;
    let triggers = distinct("triggers", front.triggers, MAX_TRIGGERS)?;
    if let Some(unknown) = triggers.iter().find(|t| !kinds.contains(&t.as_str())) {
        return Err(format!("trigger {unknown:?} is not a decision kind; the kinds are {}", kinds.join(", ")));
    }
    let instructions = body.trim().to_string();
    if instructions.is_empty() {
        return Err("the instructions after the front matter are empty".into());
    }
    Ok(Written { name, description, tools, triggers, instructions })
}

/// The front matter and the body of `text`.
fn split(text: &str) -> Result<(&str, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("a SKILL.md starts with a line `---`, then the front matter (name, description, tools), then `---`")?;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Ok((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    Err("the front matter has no closing `---` line".into())
}

pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let fits = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if fits {
        Ok(())
    } else {
        Err(format!(
            "name {name:?} must be 1 to {MAX_NAME_CHARS} lowercase letters, digits and hyphens, \
             not starting or ending with a hyphen"
        ))
    }
}

/// `list` trimmed, each entry non-empty and named once, at most `most`.
fn distinct(what: &str, list: Vec<String>, most: usize) -> Result<Vec<String>, String> {
    if list.len() > most {
        return Err(format!("{what} lists {} entries; at most {most}", list.len()));
    }
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for entry in list {
        let entry = entry.trim().to_string();
        if entry.is_empty() {
            return Err(format!("{what} has an empty entry"));
        }
        if out.contains(&entry) {
            return Err(format!("{what} names {entry} twice"));
        }
        out.push(entry);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: &[&str] = &["import_failed", "download_stalled"];

    fn skill(front: &str, body: &str) -> String {
        format!("---\n{front}\n---\n{body}")
    }

    #[test]
    fn a_skill_reads_its_front_matter_and_instructions() {
        let text = skill(
            "name: failed-import\ndescription: Recover an import\ntools: [task.inspect, task.retry]\ntriggers: [import_failed]",
            "\n# Steps\n1. Look.\n",
        );
        let written = parse(&text, KINDS).unwrap();
        assert_eq!(written.name, "failed-import");
        assert_eq!(written.tools, ["task.inspect", "task.retry"]);
        assert_eq!(written.triggers, ["import_failed"]);
        assert_eq!(written.instructions, "# Steps\n1. Look.");
        // Windows line ends and a byte-order mark read the same.
        let crlf = format!("\u{feff}{}", text.replace('\n', "\r\n"));
        assert_eq!(parse(&crlf, KINDS).unwrap().tools, written.tools);
    }

    #[test]
    fn each_mistake_is_named() {
        let refused = |front: &str, body: &str| parse(&skill(front, body), KINDS).unwrap_err();
        let ok = "name: a\ndescription: d\ntools: [x.y]";
        assert!(refused(&format!("{ok}\nmodel: big"), "b").contains("unknown field `model`"));
        assert!(refused("name: a\ntools: [x.y]", "b").contains("missing field `description`"));
        assert!(refused("name: a\ndescription: d", "b").contains("missing field `tools`"));
        assert!(refused("name: A b\ndescription: d\ntools: []", "b").contains("lowercase letters"));
        assert!(refused("name: a\ndescription: ''\ntools: []", "b").contains("description is empty"));
        assert!(refused("name: a\ndescription: |\n  two\n  lines\ntools: []", "b").contains("one line"));
        assert!(refused("name: a\ndescription: d\ntools: [x, x]", "b").contains("names x twice"));
        assert!(refused(&format!("{ok}\ntriggers: [nope]"), "b").contains("not a decision kind"));
        assert!(refused(ok, "  \n").contains("instructions"));
        assert!(parse("# no front matter", KINDS).unwrap_err().contains("starts with a line `---`"));
        assert!(parse("---\nname: a\n", KINDS).unwrap_err().contains("no closing"));
        assert!(refused("name: [a", "b").contains("cannot be read"));
    }

    #[test]
    fn the_built_in_skills_read() {
        for (_, text) in super::super::BUILT_IN {
            parse(text, &super::super::DECISION_KINDS).unwrap();
        }
    }
}
