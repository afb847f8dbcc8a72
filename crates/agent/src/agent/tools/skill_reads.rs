//! Skills in a run: the list every request's system prompt carries (each
//! skill's name and one-line description, within a token budget) and the
//! `read_skill(name)` session tool that returns a skill's instructions.
//! Reading a skill makes the tools it lists that the run may call
//! discoverable, as `search_tools` results are; the others are named with
//! the reason they stay closed. A skill never widens what a run may call:
//! its list is an upper bound, and what falls outside the run's mode or
//! allowlist stays outside. Each read is an `agent.skill_read` event of
//! the run and a row of the audit log.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::agent::providers::ToolSpec;
use crate::agent::tools::discovery::estimate_tokens;
use crate::audit::NewAuditEntry;
use crate::skills::Skill;

pub(crate) const READ_SKILL: &str = "read_skill";

/// The most tokens the skills list takes, and its share of the context
/// window when that is smaller (1 in 20).
pub(crate) const MAX_LIST_TOKENS: usize = 1024;

/// The `read_skill` tool as offered to the model.
pub(crate) fn tool_spec() -> ToolSpec {
    ToolSpec {
        name: READ_SKILL.into(),
        description: "Read a skill (a playbook listed in your instructions) by name: its steps, and which of its \
                      tools you may call; those are enabled on the next request."
            .into(),
        input_schema: json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "minLength": 1}}}),
    }
}

/// The system prompt's skills section: one line per skill while the
/// budget lasts, then how many were left out; `None` without skills.
pub(crate) fn listing(skills: &[Arc<Skill>], context_window: usize) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let budget = MAX_LIST_TOKENS.min(context_window / 20);
    let mut text = String::from(
        "Skills — playbooks for jobs that come up often. Before such a job, read the one that fits with \
         read_skill; it only guides you, and tools this run may not call stay closed:",
    );
    let mut spent = estimate_tokens(&text);
    let mut left_out = 0;
    for skill in skills {
        let line = format!("\n- {}: {}", skill.name, skill.description);
        let cost = estimate_tokens(&line);
        if spent + cost > budget {
            left_out += 1;
            continue;
        }
        spent += cost;
        text.push_str(&line);
    }
    if left_out > 0 {
        text.push_str(&format!(
            "\n({left_out} more skills do not fit this list; read_skill with a name it lacks answers every name.)"
        ));
    }
    Some(text)
}

/// Why `read_skill(name)` found nothing, with every name there is.
pub(crate) fn unknown(name: &str, skills: &[Arc<Skill>]) -> String {
    if skills.is_empty() {
        return format!("there is no skill named {name}: no skills are available");
    }
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    format!("there is no skill named {name}; the skills are: {}", names.join(", "))
}

/// What reading one skill gave the run.
#[derive(Debug, Clone)]
pub(crate) struct SkillRead {
    pub skill: Arc<Skill>,
    /// The skill's tools this run may call: made discoverable.
    pub callable: Vec<String>,
    /// The skill's tools this run may not call, each with the reason.
    pub closed: Vec<(String, String)>,
}

impl SkillRead {
    /// Sorts `skill`'s tools by `why_closed`, which says why the run may
    /// not call a tool (`None`: it may).
    pub fn new(skill: Arc<Skill>, why_closed: impl Fn(&str) -> Option<String>) -> SkillRead {
        let mut callable = Vec::new();
        let mut closed = Vec::new();
        for tool in &skill.tools {
            match why_closed(tool) {
                None => callable.push(tool.clone()),
                Some(reason) => closed.push((tool.clone(), reason)),
            }
        }
        SkillRead { skill, callable, closed }
    }

    fn closed_json(&self) -> Vec<Value> {
        self.closed.iter().map(|(tool, reason)| json!({"tool": tool, "reason": reason})).collect()
    }

    /// The tool result the model sees.
    pub fn result(&self) -> Value {
        json!({
            "name": self.skill.name,
            "description": self.skill.description,
            "instructions": self.skill.instructions,
            "tools": {"callable": self.callable, "closed": self.closed_json()},
            "note": "the callable tools are enabled on the next request; a closed tool stays closed whatever the \
                     skill says, so skip its steps or say what a person would need to do",
        })
    }

    /// The `agent.skill_read` event's payload; `started_with` for the skill
    /// a run was started with, read before its first request.
    pub fn event(&self, actor: &str, started_with: bool) -> Value {
        json!({"skill": self.skill.name, "actor": actor, "startedWith": started_with,
            "callable": self.callable, "closed": self.closed_json()})
    }

    /// The audit log's row for the read, by `principal` (`actor_kind` is
    /// `agent` or `subagent`).
    pub fn audit_row(&self, actor_kind: &str, principal: &str, run_id: &str) -> NewAuditEntry {
        NewAuditEntry {
            actor_kind: actor_kind.into(),
            principal: principal.into(),
            action: "agent.skill_read".into(),
            subject: self.skill.name.clone(),
            outcome: "succeeded".into(),
            authorization_id: None,
            idempotency_key: None,
            input_summary: Some(json!({"runId": run_id}).to_string()),
            detail: Some(json!({"callable": self.callable, "closed": self.closed_json()}).to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::SkillSource;

    fn skill(name: &str, description: &str, tools: &[&str]) -> Arc<Skill> {
        Arc::new(Skill {
            name: name.into(),
            description: description.into(),
            tools: tools.iter().map(|t| t.to_string()).collect(),
            triggers: Vec::new(),
            instructions: "# Steps".into(),
            source: SkillSource::BuiltIn,
        })
    }

    #[test]
    fn the_list_names_each_skill_within_its_budget_and_counts_the_rest() {
        let skills: Vec<Arc<Skill>> =
            (0..100).map(|i| skill(&format!("skill-{i:03}"), &"a one-line description ".repeat(3), &[])).collect();
        let small = listing(&skills[..2], 200_000).unwrap();
        assert!(small.contains("- skill-000: a one-line") && small.contains("- skill-001"), "{small}");
        assert!(!small.contains("more skills"), "{small}");

        let full = listing(&skills, 200_000).unwrap();
        assert!(estimate_tokens(&full) <= MAX_LIST_TOKENS + 40, "{} tokens", estimate_tokens(&full));
        assert!(full.contains("- skill-000") && !full.contains("- skill-099"), "the budget stops the list");
        let listed = full.matches("\n- ").count();
        assert!(full.contains(&format!("({} more skills", 100 - listed)), "{full}");

        // A small window gets a smaller list.
        let narrow = listing(&skills, 4_000).unwrap();
        assert!(narrow.matches("\n- ").count() < listed);
        assert!(listing(&[], 200_000).is_none(), "no skills, no section");
    }

    #[test]
    fn a_read_sorts_the_skills_tools_into_callable_and_closed_with_reasons() {
        let s = skill("fix-it", "Fix a thing", &["inventory.query", "download.submit", "task.retry"]);
        let read = SkillRead::new(s, |tool| match tool {
            "download.submit" => Some("labelled execute; this plan-only run stops at propose".into()),
            "task.retry" => Some("outside this run's allowlist".into()),
            _ => None,
        });
        assert_eq!(read.callable, ["inventory.query"]);
        assert_eq!(read.closed.len(), 2);
        let result = read.result();
        assert_eq!(result["instructions"], "# Steps");
        assert_eq!(result["tools"]["closed"][0]["tool"], "download.submit");
        let row = read.audit_row("agent", "agent:run-1", "run-1");
        assert_eq!((row.action.as_str(), row.subject.as_str()), ("agent.skill_read", "fix-it"));
        assert!(row.detail.unwrap().contains("outside this run's allowlist"));
        assert!(unknown("nope", &[skill("a", "b", &[])]).contains("the skills are: a"));
    }
}
