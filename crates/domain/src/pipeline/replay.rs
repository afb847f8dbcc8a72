//! What to do with a call whose earlier attempt ended `unknown`: the
//! capability's replay policy decides. `safe` runs it again under the same
//! key; `verify` asks the component's `verify` first and only re-runs on
//! `not-done`; `never` leaves it unknown for a human.

use serde_json::Value;

use super::authorize::Authorization;
use super::{Capabilities, Invocation, InvokeError, ReplayCheck, recorded};
use crate::ledger::Record;
use crate::runtime::{Grant, Loaded, Replay};

impl Capabilities {
    pub(super) async fn replay(
        &self,
        loaded: &Loaded,
        input: &Value,
        grant: Grant,
        key: &str,
        record: Record,
        authorization: &Authorization,
    ) -> Result<Invocation, InvokeError> {
        match loaded.descriptor.replay {
            Replay::Never => Ok(recorded(key, &record)),
            Replay::Safe => {
                let token = self.ledger.reclaim_unknown(&record).await?;
                self.run_claimed(loaded, input, grant, key, &record.id, &token, authorization).await
            }
            Replay::Verify => match self.verify_open(loaded, input, grant.clone(), record.clone()).await? {
                ReplayCheck::Done(inv) => Ok(Invocation { idempotency_key: key.to_string(), ..inv }),
                ReplayCheck::NotDone => {
                    let token = self.ledger.reclaim_unknown(&record).await?;
                    self.run_claimed(loaded, input, grant, key, &record.id, &token, authorization).await
                }
                ReplayCheck::CannotTell { record, .. } | ReplayCheck::Busy(record) => Ok(recorded(key, &record)),
            },
        }
    }
}
