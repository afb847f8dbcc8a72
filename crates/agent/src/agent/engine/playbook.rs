//! A run started with a skill already read: a decision's playbook (its
//! kind in the skill's `triggers`) or a skill an operator chose. The skill
//! is read when the run is created — one that cannot be refuses the start
//! — and its `agent.skill_read` event and audit row commit with the run.
//! Every request of the run then carries the skill's instructions in its
//! system prompt (not a turn the model did not take, and kept whatever
//! compaction drops), and its callable tools are enabled for each task.

use std::sync::Arc;

use super::toolbox::{self, RunCaller};
use super::{AgentRuntime, StartError};
use crate::agent::runs::{NewRun, RunMode, StepWrites};
use crate::agent::tools::discovery::estimate_tokens;
use crate::agent::tools::skill_reads::SkillRead;
use crate::runtime::{Actor, Mode};
use crate::skills::Skill;

pub(super) fn mode_of(mode: RunMode) -> Mode {
    match mode {
        RunMode::Execute => Mode::Execute,
        RunMode::PlanOnly => Mode::PlanOnly,
    }
}

impl AgentRuntime {
    /// Reads skill `name` for `new`, the run about to be created; why not
    /// when no skill of that name can be read.
    pub(super) async fn started_with(&self, name: &str, new: &NewRun) -> Result<SkillRead, StartError> {
        let set = self.skill_set().await;
        let Some(skill) = set.get(name).cloned() else {
            let why = match set.refused.iter().find(|r| r.folder == name) {
                Some(refused) => format!("the skill {name} cannot be read: {}", refused.reason),
                None => format!("no skill is named {name}"),
            };
            return Err(StartError::UnknownSkill(why));
        };
        let caller = RunCaller {
            run_id: String::new(),
            actor: Actor::Agent,
            mode: mode_of(new.mode),
            request_id: String::new(),
            turn: 0,
        };
        Ok(read(&self.svc.caps, skill, &caller, new.allowlist.as_deref()))
    }
}

/// `skill` as `caller` reads it under `allowlist`.
pub(in crate::agent::engine) fn read(
    caps: &crate::pipeline::Capabilities,
    skill: Arc<Skill>,
    caller: &RunCaller,
    allowlist: Option<&[String]>,
) -> SkillRead {
    SkillRead::new(skill, |tool| toolbox::why_closed(caps, caller, allowlist, tool))
}

/// The writes a new run `id` starts with: the read of its skill, if any.
pub(super) fn first_writes(id: &str, read: Option<&SkillRead>) -> StepWrites {
    let Some(read) = read else { return StepWrites::default() };
    StepWrites {
        events: vec![("agent.skill_read", read.event("agent", true))],
        audit_rows: vec![read.audit_row("agent", &crate::principal::agent(id), id)],
        ..StepWrites::default()
    }
}

/// The system prompt's section for the skill a run started with. Its
/// instructions ride on every request while they take at most a quarter
/// of `context_window`; a longer skill is named instead, for the model to
/// read with `read_skill` (whose answer is paged like any long result).
pub(super) fn section(read: &SkillRead, context_window: usize) -> String {
    let closed: Vec<String> = read.closed.iter().map(|(tool, why)| format!("{tool} ({why})")).collect();
    let mut text = format!(
        "This run started with the skill {} read; follow it. Its tools you may call: {}.",
        read.skill.name,
        if read.callable.is_empty() { "none".to_string() } else { read.callable.join(", ") }
    );
    if !closed.is_empty() {
        text.push_str(&format!(" Closed to this run: {}.", closed.join("; ")));
    }
    if estimate_tokens(&read.skill.instructions) > context_window / 4 {
        text.push_str(&format!(
            " Its instructions are too long to repeat on every request: read them with read_skill({:?}) first.",
            read.skill.name
        ));
        return text;
    }
    text.push_str("\n\n");
    text.push_str(&read.skill.instructions);
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::SkillSource;

    #[test]
    fn a_long_playbook_is_named_not_repeated() {
        let skill = |instructions: String| {
            Arc::new(Skill {
                name: "fix-it".into(),
                description: "d".into(),
                tools: vec!["a.read".into(), "b.write".into()],
                triggers: Vec::new(),
                instructions,
                source: SkillSource::BuiltIn,
            })
        };
        let closed = |tool: &str| (tool == "b.write").then(|| "it is outside this run's allowlist".to_string());
        let short = SkillRead::new(skill("1. Read a.".into()), closed);
        let text = section(&short, 8_000);
        assert!(text.ends_with("\n\n1. Read a."), "{text}");
        assert!(text.contains("you may call: a.read. Closed to this run: b.write (it is outside"), "{text}");
        let long = SkillRead::new(skill("step ".repeat(2_000)), closed);
        let text = section(&long, 8_000);
        assert!(text.contains("read_skill(\"fix-it\")") && !text.contains("step step"), "{text}");
        assert!(section(&long, 200_000).contains("step step"), "a large window carries it");
    }
}
