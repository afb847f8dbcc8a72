//! What to do with a call whose earlier attempt ended `unknown`: the
//! capability's replay policy decides. `safe` runs it again under the same
//! key; `verify` asks the component's `verify` first and only re-runs on
//! `not-done`; `never` leaves it unknown for a human.

use serde_json::Value;

use super::{Capabilities, Invocation, InvokeError, recorded};
use crate::ledger::{LedgerStatus, Record};
use crate::runtime::{Grant, Loaded, Replay, VerifyOutcome};

impl Capabilities {
    pub(super) async fn replay(
        &self,
        loaded: &Loaded,
        input: &Value,
        grant: Grant,
        key: &str,
        record: Record,
    ) -> Result<Invocation, InvokeError> {
        match loaded.descriptor.replay {
            Replay::Never => Ok(recorded(key, &record)),
            Replay::Safe => {
                let token = self.ledger.reclaim_unknown(&record).await?;
                self.run_claimed(loaded, input, grant, key, &record.id, &token).await
            }
            Replay::Verify => {
                let verdict = self.runtime.verify(&loaded.descriptor.id, &input.to_string(), grant.clone()).await;
                match verdict {
                    Ok(VerifyOutcome::Done { output }) => {
                        let text = output.to_string();
                        self.ledger.settle_unknown(&record, LedgerStatus::Succeeded, Some(&text)).await?;
                        let mut settled = record.clone();
                        settled.status = LedgerStatus::Succeeded;
                        settled.result = Some(text);
                        Ok(recorded(key, &settled))
                    }
                    Ok(VerifyOutcome::NotDone) => {
                        let token = self.ledger.reclaim_unknown(&record).await?;
                        self.run_claimed(loaded, input, grant, key, &record.id, &token).await
                    }
                    Ok(VerifyOutcome::CannotTell { .. }) | Err(_) => Ok(recorded(key, &record)),
                }
            }
        }
    }
}
