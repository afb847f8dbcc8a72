//! The per-call grant: who is calling, in which run or task, and the highest
//! effect class this call may use. It lives in the store data, so every host
//! import can check it; nothing outside the call can widen it.

use serde::Serialize;

use super::effects::EffectClass;

/// Who started the call: the contract's actor kinds, which components
/// read from `capstan:host/invocation`.
pub use capstan_contract::ActorKind as Actor;

/// The call's mode: a normal call, or one inside a plan-only run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    Execute,
    PlanOnly,
}

/// What one call may do.
#[derive(Debug, Clone, Serialize)]
pub struct Grant {
    /// The highest effect class open for this call.
    pub max_class: EffectClass,
    pub actor: Actor,
    pub mode: Mode,
    pub run_id: Option<String>,
    pub task_id: Option<String>,
    pub idempotency_key: Option<String>,
    /// Who is calling (`admin:<name>`, `key:<id>`, ...); records the domain
    /// store creates name it, so nobody approves their own plan.
    pub principal: String,
    /// Fires when the caller stops waiting (an aborted run): the call is
    /// ended where it stands.
    #[serde(skip)]
    pub stop: StopSignal,
    /// Whether the call keeps a record of every host import it makes
    /// (`capstan capabilities test`); widens nothing.
    #[serde(skip)]
    pub record: bool,
}

/// Tells a call in flight that its caller has stopped. Widens nothing: a
/// stopped call only ends sooner, and what it may have done is judged as
/// for any call that ended early.
#[derive(Debug, Clone, Default)]
pub struct StopSignal(Option<tokio::sync::watch::Receiver<bool>>);

impl StopSignal {
    /// A signal and the sender that fires it (`send(true)`).
    pub fn channel() -> (tokio::sync::watch::Sender<bool>, StopSignal) {
        let (tx, rx) = tokio::sync::watch::channel(false);
        (tx, StopSignal(Some(rx)))
    }

    /// Resolves once the signal fires; never for a call nobody can stop
    /// (or whose sender went away without firing).
    pub async fn stopped(&self) {
        if let Some(rx) = &self.0
            && rx.clone().wait_for(|stop| *stop).await.is_ok()
        {
            return;
        }
        std::future::pending().await
    }
}

impl Grant {
    /// A grant for `actor` up to `max_class`, outside any run or task.
    /// Subagents are read-only whatever class is asked for, and a plan-only
    /// mode never opens execute.
    pub fn new(actor: Actor, max_class: EffectClass) -> Grant {
        let max_class = if actor == Actor::Subagent { EffectClass::Read } else { max_class };
        Grant {
            max_class,
            actor,
            mode: Mode::Execute,
            run_id: None,
            task_id: None,
            idempotency_key: None,
            principal: format!("{actor:?}").to_lowercase(),
            stop: StopSignal::default(),
            record: false,
        }
    }

    /// The same grant, keeping a record of the call's host imports.
    pub fn recorded(mut self) -> Grant {
        self.record = true;
        self
    }

    /// The same grant inside a plan-only run: capped at propose.
    pub fn plan_only(mut self) -> Grant {
        self.mode = Mode::PlanOnly;
        self.max_class = self.max_class.min(EffectClass::Propose);
        self
    }

    pub fn allows(&self, class: EffectClass) -> bool {
        class <= self.max_class
    }
}

/// A host import that refused a call, kept for the call report (and the
/// audit log once it exists).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Denial {
    pub import: String,
    pub needed: EffectClass,
    pub granted: EffectClass,
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subagents_are_read_only_by_construction() {
        let g = Grant::new(Actor::Subagent, EffectClass::Execute);
        assert!(!g.allows(EffectClass::Propose));
        assert!(g.allows(EffectClass::Read));
    }

    #[test]
    fn plan_only_never_opens_execute() {
        let g = Grant::new(Actor::Agent, EffectClass::Execute).plan_only();
        assert!(g.allows(EffectClass::Propose));
        assert!(!g.allows(EffectClass::Execute));
    }
}
