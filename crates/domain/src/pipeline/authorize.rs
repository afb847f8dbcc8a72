//! The authorisation step of the invoke path (the grant it finds is charged
//! by the ledger claim). Read, preview and propose are open to any authenticated
//! caller whose mode allows them: propose only writes drafts, internal facts
//! with no outside effect, and counts no budget. Execute is open to a human,
//! and to an automated caller (API key, agent, task) only through an
//! approval of the plan the call acts on or an automation grant that covers
//! the call, and only while automation is switched on and the host is not
//! reconciling.
//! Nothing in the input (an `approvalId`, "the user agreed") authorises
//! anything by itself: the plan a capability acts on is named by its
//! `plan:<type>` tag and the input's `planId`, and only a decided approval
//! record bound to that plan as it stands counts.

use serde_json::Value;

use super::{Capabilities, Origin};
use crate::authz::{Approval, AutomationGrant, Callee};
use crate::runtime::{Descriptor, EffectClass};

/// What lets a call through.
#[derive(Debug, Clone)]
pub(super) enum Authorization {
    /// Read or preview, or a human's own call.
    NotNeeded,
    /// A standing grant, charged in the claim transaction.
    Grant(AutomationGrant),
    /// An approval of the plan, consumed by the first success.
    Approval(Approval),
}

impl Authorization {
    pub(super) fn id(&self) -> Option<String> {
        match self {
            Authorization::NotNeeded => None,
            Authorization::Grant(g) => Some(g.id.clone()),
            Authorization::Approval(a) => Some(a.id.clone()),
        }
    }

    pub(super) fn grant(&self) -> Option<&AutomationGrant> {
        match self {
            Authorization::Grant(g) => Some(g),
            _ => None,
        }
    }
}

/// The plan a capability acts on: its `plan:<type>` tag and the input's `planId`.
pub(super) fn plan_of<'a>(d: &'a Descriptor, input: &'a Value) -> Option<(&'a str, &'a str)> {
    let plan_type = d.tags.iter().find_map(|t| t.strip_prefix("plan:"))?;
    Some((plan_type, input.get("planId")?.as_str()?))
}

impl Capabilities {
    /// How the call is authorised, or `Err(reason)` when it is refused.
    pub(super) async fn authorize(
        &self,
        origin: &Origin,
        d: &Descriptor,
        input: &Value,
    ) -> Result<Result<Authorization, String>, sqlx::Error> {
        if d.label <= EffectClass::Propose || origin.is_human() {
            return Ok(Ok(Authorization::NotNeeded));
        }
        {
            let switches = self.authz.switches().await?;
            if !switches.automation_enabled {
                return Ok(Err("automation is switched off: automated execute calls are denied".into()));
            }
            if switches.read_only_reconcile {
                return Ok(Err("the host is in read-only reconcile mode: automated execute calls are denied".into()));
            }
        }
        let mut scoped = input.clone();
        if let Some((plan_type, plan_id)) = plan_of(d, input) {
            if let Some(approval) = self.authz.covering_approval(&self.domain, plan_type, plan_id, &d.id).await? {
                return Ok(Ok(Authorization::Approval(approval)));
            }
            // A grant's scope is checked against the plan's real target,
            // never against an entity the input merely names.
            if let (Some((entity, kind)), Some(fields)) =
                (self.domain.plan_target(plan_type, plan_id).await?, scoped.as_object_mut())
            {
                fields.insert("entityId".into(), Value::String(entity));
                fields.insert("mediaKind".into(), Value::String(kind));
            }
        } else if let Some(download) = input.get("downloadTaskId").and_then(Value::as_str) {
            // A call about a download (a recheck) is scoped by what it
            // downloads for: download → plan → slot → entity; a download
            // the store does not know matches no entity-scoped grant.
            let target = self.domain.plan_target("download", download).await?;
            if let Some(fields) = scoped.as_object_mut() {
                let (entity, kind) = target.unwrap_or_default();
                fields.insert("entityId".into(), Value::String(entity));
                fields.insert("mediaKind".into(), Value::String(kind));
            }
        }
        Ok(match self.authz.covering_grant(&Callee { id: &d.id, tags: &d.tags }, &scoped).await? {
            Some(grant) => Ok(Authorization::Grant(grant)),
            None => Err(format!(
                "a {} call of {} by {} needs an approval or an automation grant that covers it",
                d.label,
                d.id,
                origin.actor_kind()
            )),
        })
    }
}
