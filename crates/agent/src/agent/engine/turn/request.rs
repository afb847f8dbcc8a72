//! What one model request carries: the system prompt — the fixed
//! instructions, the skills list, the skill the run started with, the
//! plan and what discovery enabled — the conversation, and the tools on
//! offer, rebuilt only when what is offered changes.

use super::RunState;
use crate::agent::engine::toolbox;
use crate::agent::providers::{ModelRequest, ToolSpec};
use crate::agent::tools::discovery;
use crate::agent::tools::plan;

/// The fixed part of every request.
const SYSTEM_PROMPT: &str = "You are Capstan's media-automation agent. You act only through the tools offered; \
every change outside is checked and may be denied. Report only what tool results show: a submitted download is \
not an imported one. A plan is for work of several steps: for such a goal, write one with update_plan and mark \
each step as it goes. A question that one or two tool calls answer needs no plan: call them and answer.";

impl RunState<'_> {
    pub(super) fn request(&mut self) -> ModelRequest {
        let mut system = SYSTEM_PROMPT.to_string();
        if let Some(listing) = &self.skills_listing {
            system.push_str("\n\n");
            system.push_str(listing);
        }
        if let Some((_, section)) = &self.started_with {
            system.push_str("\n\n");
            system.push_str(section);
        }
        if let Some(plan) = &self.session.plan {
            system.push_str("\n\n");
            system.push_str(&plan::render(plan));
        }
        if let Some(note) = &self.discovery_note {
            system.push_str("\n\n");
            system.push_str(note);
        }
        let latest = self.session.request_text.clone();
        let chosen: Option<Vec<String>> = (self.limits.max_tools > 0).then(|| {
            let mut names = self.discovery.initial(&latest, self.limits.max_tools);
            let used = discovery::estimate_tokens(&serde_json::to_string(&self.session.messages).unwrap_or_default());
            for name in self.discovery.select(self.limits.context_budget, used).enabled {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            names
        });
        let offered: Vec<_> =
            toolbox::offered(&self.rt.svc.caps, self.caller.actor, self.caller.mode, self.allowlist.as_deref())
                .into_iter()
                .filter(|l| chosen.as_ref().is_none_or(|names| names.contains(&l.descriptor.id)))
                .collect();
        let key: Vec<String> = offered.iter().map(|l| format!("{}@{}", l.descriptor.id, l.digest)).collect();
        if key != self.offered.0 || self.offered.1.is_empty() {
            let mut tools: Vec<ToolSpec> = offered.iter().map(|l| discovery::spec(&l.descriptor)).collect();
            tools.extend(toolbox::session_specs(self.caller.actor));
            self.offered = (key, tools.into());
        }
        ModelRequest {
            system,
            messages: self.session.messages.clone(),
            tools: self.offered.1.clone(),
            max_tokens: 4096,
        }
    }
}
