//! Runs held back by what another attempt cannot change by itself: the
//! model is not configured (`config`), the day's run budget is spent
//! (`day_budget`). Such a run ends once, with the reason, and is *blocked*:
//! the waker does not queue it for a waiting message, but looks at it again
//! at `recheck_at` — 30 s, doubling to an hour, and for a day budget never
//! later than the next UTC midnight — or at once when something that could
//! change the outcome happens (settings change, a message, an explicit
//! retry). Looking is a check in process, not a task: only when the
//! obstacle is gone is the run queued again.

use crate::store::now_ms;

use super::{RunError, Runs};

/// What holds a run back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockReason {
    Config,
    DayBudget,
}

impl BlockReason {
    pub fn as_str(self) -> &'static str {
        match self {
            BlockReason::Config => "config",
            BlockReason::DayBudget => "day_budget",
        }
    }

    pub fn parse(s: &str) -> Option<BlockReason> {
        match s {
            "config" => Some(BlockReason::Config),
            "day_budget" => Some(BlockReason::DayBudget),
            _ => None,
        }
    }
}

const FIRST_LOOK_MS: i64 = 30_000;
const LONGEST_WAIT_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;

/// When to look again after `checks` looks that found the run still blocked.
pub(crate) fn next_look(block: BlockReason, checks: i64, now: i64) -> i64 {
    let wait = FIRST_LOOK_MS.saturating_mul(1 << checks.clamp(0, 20)).min(LONGEST_WAIT_MS);
    let at = now + wait;
    match block {
        BlockReason::Config => at,
        // A new UTC day gives the day's budget back.
        BlockReason::DayBudget => at.min(now - now.rem_euclid(DAY_MS) + DAY_MS),
    }
}

/// A blocked run whose next look is due.
#[derive(Debug, Clone)]
pub struct Blocked {
    pub run_id: String,
    pub block: BlockReason,
    pub checks: i64,
}

impl Runs {
    /// Marks the run blocked by `block`, looked at again after the backoff
    /// (a run that ended meanwhile, or is being aborted, is left alone).
    pub async fn block(&self, id: &str, block: BlockReason) -> Result<(), RunError> {
        let now = now_ms();
        sqlx::query(
            "UPDATE agent_run SET blocked_on = $2, blocked_checks = 0, recheck_at = $3, updated_at = $4 \
             WHERE id = $1 AND status IN ('queued', 'running', 'waiting') AND abort_reason IS NULL",
        )
        .bind(id)
        .bind(block.as_str())
        .bind(next_look(block, 0, now))
        .bind(now)
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Blocked runs whose next look is due.
    pub(crate) async fn blocked_due(&self, now: i64) -> Result<Vec<Blocked>, RunError> {
        use sqlx::Row;
        let rows = sqlx::query(
            "SELECT id, blocked_on, blocked_checks FROM agent_run WHERE blocked_on IS NOT NULL AND recheck_at <= $1 \
             AND status IN ('failed', 'budget_exceeded') ORDER BY recheck_at LIMIT 100",
        )
        .bind(now)
        .fetch_all(&self.db.pool)
        .await?;
        let mut due = Vec::new();
        for row in rows {
            let on: String = row.try_get("blocked_on")?;
            if let Some(block) = BlockReason::parse(&on) {
                due.push(Blocked { run_id: row.try_get("id")?, block, checks: row.try_get("blocked_checks")? });
            }
        }
        Ok(due)
    }

    /// The look found the run still blocked: the next one after a longer wait.
    pub(crate) async fn still_blocked(&self, blocked: &Blocked) -> Result<(), RunError> {
        let now = now_ms();
        sqlx::query("UPDATE agent_run SET blocked_checks = blocked_checks + 1, recheck_at = $2 WHERE id = $1")
            .bind(&blocked.run_id)
            .bind(next_look(blocked.block, blocked.checks + 1, now))
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }

    /// Something that could unblock runs happened: look at `id` (or every
    /// blocked run) at once. A settings change restarts the backoff; a
    /// message or a retry of one run keeps it.
    pub async fn look_again(&self, id: Option<&str>) -> Result<u64, RunError> {
        let now = now_ms();
        let n = match id {
            Some(id) => {
                sqlx::query("UPDATE agent_run SET recheck_at = $2 WHERE id = $1 AND blocked_on IS NOT NULL")
                    .bind(id)
                    .bind(now)
                    .execute(&self.db.pool)
                    .await?
            }
            None => {
                sqlx::query("UPDATE agent_run SET recheck_at = $1, blocked_checks = 0 WHERE blocked_on IS NOT NULL")
                    .bind(now)
                    .execute(&self.db.pool)
                    .await?
            }
        };
        Ok(n.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::{BlockReason, next_look};

    #[test]
    fn looks_back_off_to_an_hour_and_a_day_budget_to_midnight() {
        let noon = 86_400_000 * 100 + 43_200_000;
        assert_eq!(next_look(BlockReason::Config, 0, noon) - noon, 30_000);
        assert_eq!(next_look(BlockReason::Config, 1, noon) - noon, 60_000);
        assert_eq!(next_look(BlockReason::Config, 40, noon) - noon, 3_600_000);
        let before_midnight = 86_400_000 * 101 - 60_000;
        assert_eq!(next_look(BlockReason::DayBudget, 10, before_midnight), 86_400_000 * 101);
    }
}
