//! Who is calling and what that allows: the origin of a call, the mode gate
//! (plan-only runs and subagents), the authorisation decision, and the grant
//! the sandbox gets. Text from a model never reaches this decision; only the
//! origin's kind and records do.

use crate::runtime::{Actor, EffectClass, Grant, Mode};

/// Where a call comes from.
#[derive(Debug, Clone)]
pub struct Origin {
    pub actor: Actor,
    /// The authenticated principal: `admin:<name>`, `key:<id>`, `cli:<user>`, `task:<kind>`.
    pub principal: String,
    pub run_id: Option<String>,
    pub task_id: Option<String>,
    pub tool_call_id: Option<String>,
    /// The explicit user request this call belongs to; scopes idempotency
    /// when the call is in no run or task.
    pub request_id: String,
    pub mode: Mode,
    /// The highest class the caller asked to open (the CLI's `--grant`).
    pub ceiling: EffectClass,
}

impl Origin {
    /// A call from the command line by the operator at the machine.
    pub fn cli(ceiling: EffectClass) -> Origin {
        let user = std::env::var("USER").unwrap_or_else(|_| "operator".into());
        Origin {
            actor: Actor::Cli,
            principal: crate::principal::cli(&user),
            run_id: None,
            task_id: None,
            tool_call_id: None,
            request_id: crate::store::new_id(),
            mode: Mode::Execute,
            ceiling,
        }
    }

    /// A call made by the background task `task`, in the task's
    /// idempotency scope, so a retried attempt meets its earlier ledger
    /// records. The only place a task's origin is made.
    pub fn task(task: &crate::tasks::Task) -> Origin {
        Origin {
            actor: Actor::Task,
            principal: crate::principal::task(&task.kind),
            run_id: None,
            task_id: Some(task.id.clone()),
            tool_call_id: None,
            request_id: task.id.clone(),
            mode: Mode::Execute,
            ceiling: EffectClass::Execute,
        }
    }

    /// A call task `task` makes for `principal`, who asked for it (the
    /// administrator or key that resolved a decision): that caller's actor
    /// and principal, so a human's choice is human authorisation and a
    /// key's needs a grant or an approval, in the task's idempotency scope,
    /// so a retried attempt meets its earlier ledger records. Anyone else
    /// (the system) is the task itself.
    pub fn task_for(task: &crate::tasks::Task, principal: &str) -> Origin {
        let actor = if principal.starts_with(&crate::principal::admin("")) {
            Actor::ConsoleAdmin
        } else if principal.starts_with(&crate::principal::key("")) {
            Actor::ApiKey
        } else {
            return Origin::task(task);
        };
        Origin { actor, principal: principal.to_string(), ..Origin::task(task) }
    }

    pub fn actor_kind(&self) -> &'static str {
        self.actor.as_str()
    }

    /// The idempotency scope: the user request within a run (identical
    /// writes in one request collapse; a later request may repeat one),
    /// else the task, else the request.
    pub fn scope(&self) -> String {
        match (&self.run_id, &self.task_id) {
            (Some(run), _) => format!("run:{run}/req:{}", self.request_id),
            (None, Some(task)) => format!("task:{task}"),
            (None, None) => format!("req:{}", self.request_id),
        }
    }

    /// The execution identity's scope for a call of `loaded`: [`scope`],
    /// and for a tool call of something that writes nothing the domain
    /// or the outside keeps (a command such as `df`, a read), the tool
    /// call too — asking for the same diagnostic twice runs it twice,
    /// while identical domain writes in one request still share one
    /// execution. The same tool call after a restart meets its own
    /// record, and the capability's replay policy settles it.
    ///
    /// [`scope`]: Origin::scope
    pub fn scope_for(&self, loaded: &crate::runtime::Loaded) -> String {
        match &self.tool_call_id {
            Some(call) if !keeps_state(loaded) => format!("{}/call:{call}", self.scope()),
            _ => self.scope(),
        }
    }

    /// The mode gate: plan-only runs stop at propose, subagents at preview.
    pub fn gate(&self, label: EffectClass) -> Result<(), String> {
        if self.actor == Actor::Subagent && label > EffectClass::Preview {
            return Err(format!("subagents may only read; this capability is labelled {label}"));
        }
        if self.mode == Mode::PlanOnly && label > EffectClass::Propose {
            return Err(format!("a plan-only run may not call a capability labelled {label}"));
        }
        Ok(())
    }

    /// Whether a human stands behind this call (the console admin's own
    /// call, or the operator at the command line): that is authorisation
    /// enough for propose and execute.
    pub(crate) fn is_human(&self) -> bool {
        matches!(self.actor, Actor::ConsoleAdmin | Actor::Cli)
    }

    /// The grant the sandbox gets: the capability's own label, capped by the
    /// caller's ceiling, the mode and the actor.
    pub fn grant(&self, label: EffectClass, key: Option<String>) -> Grant {
        let mut grant = Grant::new(self.actor, label.min(self.ceiling));
        if self.mode == Mode::PlanOnly {
            grant = grant.plan_only();
        }
        grant.run_id = self.run_id.clone();
        grant.task_id = self.task_id.clone();
        grant.idempotency_key = key;
        grant.principal = self.principal.clone();
        grant
    }
}

/// Whether a call of `loaded` may change what the domain or the outside
/// keeps: it imports drafts, records, outbound writes or file writes, or
/// it is an external tool above read, whose effects the host cannot see.
/// Running one of the operator's commands is not such a change.
fn keeps_state(loaded: &crate::runtime::Loaded) -> bool {
    use crate::runtime::effects::interface::{DRAFTS, FILES_WRITE, OUTBOUND_WRITE, RECORDS};
    if matches!(loaded.source, crate::runtime::Source::External(_)) {
        return loaded.descriptor.label > EffectClass::Read;
    }
    loaded.imports.imports.iter().any(|name| {
        let bare = name.split('@').next().unwrap_or(name);
        [DRAFTS, RECORDS, OUTBOUND_WRITE, FILES_WRITE].contains(&bare)
    })
}
