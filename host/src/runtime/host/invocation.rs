//! `capstan:host/invocation` (read): the call's context, the clock, and the
//! capability's non-secret settings.

use crate::runtime::bindings::capstan::host::invocation::{ActorKind, CallContext, Host};
use crate::runtime::call_state::CallState;
use crate::runtime::effects::interface;
use crate::runtime::grant::{Actor, Mode};

impl Host for CallState {
    async fn context(&mut self) -> CallContext {
        let _ = self.check(interface::INVOCATION);
        let context = CallContext {
            capability_id: self.target.id.clone(),
            run_id: self.grant.run_id.clone(),
            task_id: self.grant.task_id.clone(),
            idempotency_key: self.grant.idempotency_key.clone(),
            actor: match self.grant.actor {
                Actor::ConsoleAdmin => ActorKind::ConsoleAdmin,
                Actor::ApiKey => ActorKind::ApiKey,
                Actor::Agent => ActorKind::Agent,
                Actor::Subagent => ActorKind::Subagent,
                Actor::Task => ActorKind::Task,
                Actor::Cli => ActorKind::Cli,
            },
            grant: self.grant.max_class.as_str().to_string(),
            mode: match self.grant.mode {
                Mode::Execute => "execute".into(),
                Mode::PlanOnly => "plan-only".into(),
            },
        };
        let args = self.args(String::new);
        self.record_text(interface::INVOCATION, "context", args, format!("{context:?}"));
        context
    }

    async fn now_ms(&mut self) -> u64 {
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let args = self.args(String::new);
        self.record_text(interface::INVOCATION, "now-ms", args, now.to_string());
        now
    }

    async fn setting(&mut self, name: String) -> Option<String> {
        let value = self.setup.settings.get(&self.target.id).and_then(|s| s.get(&name)).cloned();
        let args = self.args(|| format!("{name:?}"));
        self.record_text(interface::INVOCATION, "setting", args, format!("{value:?}"));
        value
    }
}
