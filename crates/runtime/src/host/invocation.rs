//! `capstan:host/invocation` (read): the call's context, the clock, and the
//! capability's non-secret settings. Its functions have no error to
//! answer with: were the interface ever refused, a call would get an empty
//! context, the epoch and no setting.

use super::boundary::host_call;
use crate::bindings::capstan::host::invocation::{ActorKind, CallContext, Host};
use crate::call_state::CallCore;
use crate::effects::interface;
use crate::grant::{Actor, Mode};

impl CallCore {
    fn call_context(&self) -> CallContext {
        CallContext {
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
        }
    }
}

impl Host for CallCore {
    async fn context(&mut self) -> CallContext {
        let args = self.args(String::new);
        let shown = |context: &CallContext| format!("{context:?}");
        let context = host_call!(self, interface::INVOCATION, "context", args, shown, |call| Ok(call.call_context()));
        context.unwrap_or_else(|_| CallContext {
            capability_id: String::new(),
            run_id: None,
            task_id: None,
            idempotency_key: None,
            actor: ActorKind::Cli,
            grant: String::new(),
            mode: String::new(),
        })
    }

    async fn now_ms(&mut self) -> u64 {
        let args = self.args(String::new);
        let now = host_call!(self, interface::INVOCATION, "now-ms", args, u64::to_string, |_call| {
            let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            Ok(since.map_or(0, |d| d.as_millis() as u64))
        });
        now.unwrap_or(0)
    }

    async fn setting(&mut self, name: String) -> Option<String> {
        let args = self.args(|| format!("{name:?}"));
        let shown = |value: &Option<String>| format!("{value:?}");
        let value = host_call!(self, interface::INVOCATION, "setting", args, shown, |call| {
            Ok(call.setup.settings.get(&call.target.id).and_then(|s| s.get(&name)).cloned())
        });
        value.ok().flatten()
    }
}
