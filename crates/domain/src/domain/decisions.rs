//! Decisions: questions left for a human (an ambiguous identity, a download
//! that lost its data, a run over budget). One per dedupe key, so a sweep
//! that meets the same question again does not open it twice. A decision
//! goes `open → investigating → awaiting_user → resolved | dismissed`;
//! every change is announced (`decision.created`, `decision.updated`) by an
//! event written in the same transaction.

use serde_json::{Value, json};
use sqlx::{Any, Transaction};

use super::decision_options;
use super::model::ReadRow;
use super::{Decision, DecisionStatus, Domain, DomainError, require};
use crate::events::Events;
use crate::store::{is_unique_violation, new_id, now_ms};
use crate::tasks::{NewTask, Tasks};

/// The task kind that carries out a decision's chosen option, queued in
/// the transaction that records the choice (dedupe key
/// `resolveDecision:<decisionId>`).
pub const RESOLVE_DECISION: &str = "resolveDecision";

/// The task kind that may start a bounded investigation of a new decision,
/// queued in the transaction that opens it (dedupe key
/// `investigate:<decisionId>`); it looks at the settings when it runs.
pub const INVESTIGATE_DECISION: &str = "investigateDecision";

/// The task kind that checks, from the facts, whether a recovery run
/// recovered what its decision was about (dedupe key `verify:<decisionId>`).
pub const VERIFY_RECOVERY: &str = "verifyRecovery";

/// The kinds of decision an agent may investigate by itself.
pub const INVESTIGABLE: &[&str] = &["identity_ambiguous", "download_failed", "download_stalled"];

/// The kinds investigated only when a skill names them in its `triggers`
/// (it is their playbook); the investigation task looks when it runs.
pub const WITH_PLAYBOOK: &[&str] = &["download_submit_failed", "import_failed"];

/// Whether choosing `option` leaves something to carry out.
fn acts(option: &Value) -> bool {
    !matches!(option.get("action").and_then(Value::as_str), Some("dismiss" | "ignore"))
}

/// What a decision's list is narrowed to.
#[derive(Debug, Clone, Default)]
pub struct DecisionFilter<'a> {
    pub status: Option<DecisionStatus>,
    pub kind: Option<&'a str>,
    pub subject: Option<&'a str>,
    /// Only decisions listed after the one created at this time with this
    /// id (newest first): the next page.
    pub after: Option<(i64, &'a str)>,
}

/// How a human (or the system) answers a decision.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer<'a> {
    /// The option with this id was chosen.
    Resolve { option_id: &'a str },
    /// Nothing is to be done.
    Dismiss,
    /// The cause went away by itself; `facts` say how it is known.
    Cleared { facts: Value },
    /// A recovery the system carried out and then saw work (`execution`
    /// holds the facts that show it).
    Recovered { execution: Value },
}

/// Adds `from` to `into`, object into object, so a later finding about one
/// thing (`autoRecover.outcome`) keeps what was known of it before
/// (`autoRecover.attempt`).
fn merge(into: &mut Value, from: &Value) {
    match (into.as_object_mut(), from.as_object()) {
        (Some(into), Some(from)) => {
            for (key, value) in from {
                match into.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => merge(existing, value),
                    _ => {
                        into.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        _ if from.is_object() => *into = from.clone(),
        _ => {}
    }
}

impl Domain {
    /// Opens a decision, or returns the one already opened under `dedupe_key`
    /// with `false`.
    pub async fn open_decision(
        &self,
        kind: &str,
        subject: Option<&str>,
        options: &Value,
        evidence: &Value,
        dedupe_key: &str,
    ) -> Result<(Decision, bool), DomainError> {
        self.open_decision_by(None, kind, subject, options, evidence, dedupe_key).await
    }

    /// [`Domain::open_decision`] recording who opened it: `opened_by` is the
    /// capability whose component did, `None` the host.
    pub(super) async fn open_decision_by(
        &self,
        opened_by: Option<&str>,
        kind: &str,
        subject: Option<&str>,
        options: &Value,
        evidence: &Value,
        dedupe_key: &str,
    ) -> Result<(Decision, bool), DomainError> {
        require(!kind.trim().is_empty(), || "decision kind must not be empty".into())?;
        require(!dedupe_key.trim().is_empty(), || "dedupe key must not be empty".into())?;
        let options = decision_options::checked(options)?;
        if let Some(found) = self.decision_by_key(dedupe_key).await? {
            return Ok((found, false));
        }
        let id = new_id();
        let now = now_ms();
        let mut tx = self.db.begin_write().await?;
        let inserted = sqlx::query(
            "INSERT INTO decision (id, kind, subject, status, options, evidence, dedupe_key, opened_by, created_at, \
             updated_at) VALUES ($1, $2, $3, 'open', $4, $5, $6, $7, $8, $8)",
        )
        .bind(&id)
        .bind(kind)
        .bind(subject)
        .bind(options.to_string())
        .bind(if evidence.is_null() { "{}".to_string() } else { evidence.to_string() })
        .bind(dedupe_key)
        .bind(opened_by)
        .bind(now)
        .execute(&mut *tx)
        .await;
        match inserted {
            Ok(_) => {
                if INVESTIGABLE.contains(&kind) || WITH_PLAYBOOK.contains(&kind) {
                    let investigate = NewTask {
                        kind: INVESTIGATE_DECISION.into(),
                        subject: Some(id.clone()),
                        payload: json!({"decisionId": id}),
                        dedupe_key: Some(format!("investigate:{id}")),
                        max_attempts: 3,
                        created_by: crate::principal::task(INVESTIGATE_DECISION),
                    };
                    Tasks::enqueue_in(&mut tx, &investigate).await?;
                }
                let payload =
                    json!({"decisionId": id, "kind": kind, "status": DecisionStatus::Open, "dedupeKey": dedupe_key});
                Events::append_in(&mut tx, self.db.backend, "decision.created", subject, &payload).await?;
                tx.commit().await?;
                self.events.announce();
                Ok((self.decision(&id).await?, true))
            }
            Err(e) if is_unique_violation(&e) => {
                drop(tx);
                Ok((self.decision_by_key(dedupe_key).await?.ok_or(DomainError::Sql(e))?, false))
            }
            Err(e) => Err(e.into()),
        }
    }

    pub async fn decision(&self, id: &str) -> Result<Decision, DomainError> {
        sqlx::query("SELECT * FROM decision WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.db.pool)
            .await?
            .map(|r| Decision::from_row(&r))
            .transpose()?
            .ok_or_else(|| DomainError::NotFound(format!("no decision {id}")))
    }

    pub(super) async fn decision_by_key(&self, key: &str) -> Result<Option<Decision>, DomainError> {
        Ok(sqlx::query("SELECT * FROM decision WHERE dedupe_key = $1")
            .bind(key)
            .fetch_optional(&self.db.pool)
            .await?
            .map(|r| Decision::from_row(&r))
            .transpose()?)
    }

    /// Decisions, newest first, optionally in one status.
    pub async fn decisions(&self, status: Option<DecisionStatus>, limit: i64) -> Result<Vec<Decision>, DomainError> {
        self.decisions_where(&DecisionFilter { status, ..DecisionFilter::default() }, limit).await
    }

    /// Decisions matching `filter`, newest first (latest created first; the
    /// same millisecond by id).
    pub async fn decisions_where(&self, filter: &DecisionFilter<'_>, limit: i64) -> Result<Vec<Decision>, DomainError> {
        let mut sql = String::from("SELECT * FROM decision WHERE 1 = 1");
        let mut values: Vec<String> = Vec::new();
        for (column, value) in
            [("status", filter.status.map(DecisionStatus::as_str)), ("kind", filter.kind), ("subject", filter.subject)]
        {
            if let Some(value) = value {
                values.push(value.to_string());
                sql.push_str(&format!(" AND {column} = ${}", values.len()));
            }
        }
        if let Some((_, id)) = filter.after {
            values.push(id.to_string());
            let (at, id) = (values.len() + 1, values.len());
            sql.push_str(&format!(" AND (created_at < ${at} OR (created_at = ${at} AND id > ${id}))"));
        }
        let limit_at = values.len() + 1 + usize::from(filter.after.is_some());
        sql.push_str(&format!(" ORDER BY created_at DESC, id LIMIT ${limit_at}"));
        let mut query = sqlx::query(&sql);
        for value in values {
            query = query.bind(value);
        }
        if let Some((at, _)) = filter.after {
            query = query.bind(at);
        }
        let rows = query.bind(limit.clamp(1, 1000)).fetch_all(&self.db.pool).await?;
        Ok(rows.iter().map(Decision::from_row).collect::<Result<_, _>>()?)
    }

    /// Every decision opened for the root cause `root`: the first under the
    /// dedupe key `root`, each later occurrence under `root#<n>`; oldest
    /// first.
    pub async fn decisions_of_root(&self, root: &str) -> Result<Vec<Decision>, DomainError> {
        let rows =
            sqlx::query("SELECT * FROM decision WHERE dedupe_key = $1 OR dedupe_key LIKE $2 ORDER BY created_at, id")
                .bind(root)
                .bind(format!("{root}#%"))
                .fetch_all(&self.db.pool)
                .await?;
        let all: Vec<Decision> = rows.iter().map(Decision::from_row).collect::<Result<_, _>>()?;
        let occurrence =
            |d: &Decision| d.dedupe_key == root || d.dedupe_key.strip_prefix(root).is_some_and(|r| r.starts_with('#'));
        Ok(all.into_iter().filter(occurrence).collect())
    }

    /// Opens a decision for the root cause `root` unless one is undecided,
    /// or the last was answered and the subject has not moved since
    /// (`moved_at`: a cause that stayed is the same occurrence, and a human
    /// who dismissed it is not asked again). Answers the decision opened.
    pub async fn open_occurrence(
        &self,
        root: &str,
        kind: &str,
        subject: &str,
        options: &Value,
        evidence: &Value,
        moved_at: i64,
    ) -> Result<Option<Decision>, DomainError> {
        let past = self.decisions_of_root(root).await?;
        if past.iter().any(|d| !d.status.is_final()) {
            return Ok(None);
        }
        if past.last().is_some_and(|last| last.updated_at >= moved_at) {
            return Ok(None);
        }
        let key = if past.is_empty() { root.to_string() } else { format!("{root}#{}", past.len() + 1) };
        let (decision, created) = self.open_decision(kind, Some(subject), options, evidence, &key).await?;
        Ok(created.then_some(decision))
    }

    /// The undecided decision for root cause `root`, if there is one.
    pub async fn undecided_of_root(&self, root: &str) -> Result<Option<Decision>, DomainError> {
        Ok(self.decisions_of_root(root).await?.into_iter().find(|d| !d.status.is_final()))
    }

    /// Moves an undecided decision to `investigating` or `awaiting_user`,
    /// merging `evidence` into what it holds.
    pub async fn advance_decision(
        &self,
        id: &str,
        status: DecisionStatus,
        evidence: &Value,
    ) -> Result<Decision, DomainError> {
        if !matches!(status, DecisionStatus::Investigating | DecisionStatus::AwaitingUser) {
            return Err(DomainError::Invalid(format!(
                "a decision may be moved to investigating or awaiting_user, not {status}"
            )));
        }
        let current = self.decision(id).await?;
        if current.status.is_final() {
            return Err(DomainError::Conflict(format!("decision {id} is already {}", current.status)));
        }
        let mut merged = current.evidence.clone();
        merge(&mut merged, evidence);
        let mut tx = self.db.begin_write().await?;
        let changed = sqlx::query(
            "UPDATE decision SET status = $1, evidence = $2, updated_at = $3 \
             WHERE id = $4 AND updated_at = $5 AND status NOT IN ('resolved', 'dismissed')",
        )
        .bind(status.as_str())
        .bind(merged.to_string())
        .bind(now_ms().max(current.updated_at + 1))
        .bind(id)
        .bind(current.updated_at)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if changed == 0 {
            return Err(DomainError::Conflict(format!("decision {id} changed meanwhile; nothing was changed")));
        }
        self.announce_decision(tx, &current, status).await
    }

    /// Answers an undecided decision once: a chosen option (which must be
    /// one of its options), a dismissal, or a cause that cleared by itself.
    /// `by` is who answered.
    pub async fn answer_decision(&self, id: &str, answer: &Answer<'_>, by: &str) -> Result<Decision, DomainError> {
        let current = self.decision(id).await?;
        let mut follow_up = None;
        let (status, resolution) = match answer {
            Answer::Resolve { option_id } => {
                let option = decision_options::find(&current.options, option_id)
                    .cloned()
                    .ok_or_else(|| DomainError::Invalid(format!("decision {id} has no option {option_id:?}")))?;
                if acts(&option) {
                    follow_up = Some(NewTask {
                        kind: RESOLVE_DECISION.into(),
                        subject: Some(id.to_string()),
                        payload: json!({"decisionId": id}),
                        dedupe_key: Some(format!("{RESOLVE_DECISION}:{id}")),
                        max_attempts: 5,
                        created_by: by.to_string(),
                    });
                    (DecisionStatus::Resolved, json!({"optionId": option_id, "option": option}))
                } else {
                    let execution = json!({"action": option["action"], "outcome": "nothing to do"});
                    (DecisionStatus::Resolved, json!({"optionId": option_id, "option": option, "execution": execution}))
                }
            }
            Answer::Dismiss => (DecisionStatus::Dismissed, json!({"dismissed": true})),
            Answer::Cleared { facts } => (DecisionStatus::Resolved, json!({"cleared": true, "facts": facts})),
            Answer::Recovered { execution } => {
                (DecisionStatus::Resolved, json!({"recovered": true, "execution": execution}))
            }
        };
        let mut tx = self.db.begin_write().await?;
        let changed = sqlx::query(
            "UPDATE decision SET status = $1, resolution = $2, resolved_by = $3, updated_at = $4 \
             WHERE id = $5 AND status NOT IN ('resolved', 'dismissed')",
        )
        .bind(status.as_str())
        .bind(resolution.to_string())
        .bind(by)
        .bind(now_ms().max(current.updated_at + 1))
        .bind(id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if changed == 0 {
            return Err(DomainError::Conflict(format!("decision {id} is already {}", current.status)));
        }
        if let Some(task) = &follow_up {
            Tasks::enqueue_in(&mut tx, task).await?;
        }
        self.announce_decision(tx, &current, status).await
    }

    /// Records what carrying out a resolved decision's option came to, as
    /// `resolution.execution`, once: a second record is refused, so a
    /// repeated attempt learns it was already done.
    pub async fn record_execution(&self, id: &str, execution: &Value) -> Result<Decision, DomainError> {
        let current = self.decision(id).await?;
        let Some(mut resolution) = current.resolution.clone().filter(|_| current.status == DecisionStatus::Resolved)
        else {
            return Err(DomainError::Conflict(format!("decision {id} is {}, not resolved", current.status)));
        };
        if resolution.get("execution").is_some() {
            return Err(DomainError::Conflict(format!("decision {id}'s option was already carried out")));
        }
        resolution["execution"] = execution.clone();
        let mut tx = self.db.begin_write().await?;
        let changed =
            sqlx::query("UPDATE decision SET resolution = $1, updated_at = $2 WHERE id = $3 AND updated_at = $4")
                .bind(resolution.to_string())
                .bind(now_ms().max(current.updated_at + 1))
                .bind(id)
                .bind(current.updated_at)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        if changed == 0 {
            return Err(DomainError::Conflict(format!("decision {id} changed meanwhile; nothing was recorded")));
        }
        self.announce_decision(tx, &current, DecisionStatus::Resolved).await
    }

    /// Writes `decision.updated` for `before`'s decision, now `status`, in
    /// `tx`, commits, and answers the decision as it is now.
    async fn announce_decision(
        &self,
        mut tx: Transaction<'static, Any>,
        before: &Decision,
        status: DecisionStatus,
    ) -> Result<Decision, DomainError> {
        let payload = json!({"decisionId": before.id, "kind": before.kind, "from": before.status, "status": status});
        let subject = before.subject.as_deref();
        Events::append_in(&mut tx, self.db.backend, "decision.updated", subject, &payload).await?;
        tx.commit().await?;
        self.events.announce();
        self.decision(&before.id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_findings_keep_what_was_known_before() {
        let mut evidence = json!({"problem": "missing", "autoRecover": {"attempt": 1}});
        merge(&mut evidence, &json!({"autoRecover": {"outcome": "not recovered in time"}, "extra": [1]}));
        assert_eq!(
            evidence,
            json!({"problem": "missing", "autoRecover": {"attempt": 1, "outcome": "not recovered in time"}, "extra": [1]})
        );
    }
}
