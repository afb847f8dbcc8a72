//! The audit log: an append-only, hash-chained `audit_event` table. Every
//! invoke, every denial (import-layer denials included), every component
//! load or refusal and every command start or cancel is appended here; each
//! row's hash covers its contents and the previous row's hash, so `capstan audit verify` finds the first row
//! that was altered, removed or inserted. The chain is extended through the
//! one-row `audit_head` table: by each append on SQLite, by the sequencer
//! on PostgreSQL ([`sequencer`]), where appends only queue their rows.
//! Inputs are never stored, only a redacted summary (field names, types
//! and sizes).

pub mod calls;
mod commands;
mod components;
mod queue;
mod sequencer;
mod verify;

pub use calls::CallBy;
pub use components::ComponentAudit;
pub use queue::RowQueue;
pub use verify::ChainCheck;

use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::{Any, FromRow, Row, Transaction};

use crate::store::{Db, now_ms};

/// Rows in one multi-row insert: 13 parameters each, well under either
/// backend's limit.
const ROWS_PER_INSERT: usize = 64;

/// One event to append.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct NewAuditEntry {
    pub actor_kind: String,
    pub principal: String,
    /// `capability.invoke`, `capability.denied`, `component.loaded`, ...
    pub action: String,
    /// What the action was about: a capability id, a file, a grant id.
    pub subject: String,
    /// `succeeded`, `failed`, `pending`, `unknown`, `denied`, `refused`, ...
    pub outcome: String,
    pub authorization_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub input_summary: Option<String>,
    pub detail: Option<String>,
}

/// A stored event.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub seq: i64,
    pub at: i64,
    #[serde(flatten)]
    #[sqlx(flatten)]
    pub event: NewAuditEntry,
    pub prev_hash: String,
    pub hash: String,
}

/// The result of checking the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub enum Verdict {
    Intact { events: i64 },
    Broken { seq: i64, reason: String },
}

fn link_hash(seq: i64, at: i64, e: &NewAuditEntry, prev_hash: &str) -> String {
    // A length-prefixed encoding, so no field boundary can be shifted.
    let mut h = Sha256::new();
    let opt = |v: &Option<String>| v.clone().unwrap_or_default();
    for part in [
        seq.to_string(),
        at.to_string(),
        e.actor_kind.clone(),
        e.principal.clone(),
        e.action.clone(),
        e.subject.clone(),
        e.outcome.clone(),
        opt(&e.authorization_id),
        opt(&e.idempotency_key),
        opt(&e.input_summary),
        opt(&e.detail),
        prev_hash.to_string(),
    ] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    hex::encode(h.finalize())
}

/// A redacted summary of a JSON input: field names with their type and
/// size, never values.
pub fn summarize_input(input: &serde_json::Value) -> String {
    use serde_json::Value;
    fn shape(v: &Value) -> String {
        match v {
            Value::Null => "null".into(),
            Value::Bool(_) => "bool".into(),
            Value::Number(_) => "number".into(),
            Value::String(s) => format!("string({})", s.chars().count()),
            Value::Array(a) => format!("array({})", a.len()),
            Value::Object(o) => format!("object({})", o.len()),
        }
    }
    match input {
        Value::Object(map) => {
            let fields: Vec<String> = map.iter().map(|(k, v)| format!("{k}:{}", shape(v))).collect();
            format!("{{{}}}", fields.join(","))
        }
        other => shape(other),
    }
}

/// Appends and verifies audit events.
#[derive(Clone)]
pub struct Audit {
    db: Db,
}

impl Audit {
    pub fn new(db: Db) -> Audit {
        Audit { db }
    }

    /// Appends `event` inside `tx` (so it commits or rolls back with the
    /// change it describes).
    pub async fn append_in(tx: &mut Transaction<'_, Any>, event: &NewAuditEntry) -> Result<(), sqlx::Error> {
        Self::append_all_in(tx, std::slice::from_ref(event)).await
    }

    /// Appends `events`, in order, inside `tx`. On SQLite, one machine's
    /// one writer, they are chained at once (three statements however many
    /// there are); on PostgreSQL they wait in the intake for the sequencer
    /// ([`sequencer`]), so appends of several nodes never wait on each
    /// other for the head.
    pub async fn append_all_in(tx: &mut Transaction<'_, Any>, events: &[NewAuditEntry]) -> Result<(), sqlx::Error> {
        if events.is_empty() {
            return Ok(());
        }
        let at = now_ms();
        if tx.backend_name() == <sqlx::Postgres as sqlx::Database>::NAME {
            return sequencer::take_in(tx, events, at).await;
        }
        let entries: Vec<(i64, NewAuditEntry)> = events.iter().map(|e| (at, e.clone())).collect();
        chain_in(tx, &entries).await
    }

    /// Appends `event` in its own transaction.
    pub async fn append(&self, event: &NewAuditEntry) -> Result<(), sqlx::Error> {
        let event = event.clone();
        self.db
            .write(move |tx| {
                let event = event.clone();
                Box::pin(async move { Self::append_in(tx, &event).await })
            })
            .await
    }

    /// Events after `after`, oldest first, at most `limit`.
    pub async fn list(&self, after: i64, limit: i64) -> Result<Vec<AuditEntry>, sqlx::Error> {
        self.catch_up().await?;
        self.chained(after, limit).await
    }

    /// Chained events after `after`, without chaining what waits first.
    async fn chained(&self, after: i64, limit: i64) -> Result<Vec<AuditEntry>, sqlx::Error> {
        let rows = sqlx::query("SELECT * FROM audit_event WHERE seq > $1 ORDER BY seq LIMIT $2")
            .bind(after)
            .bind(limit)
            .fetch_all(&self.db.pool)
            .await?;
        rows.iter().map(AuditEntry::from_row).collect()
    }

    /// The newest `limit` events, oldest first.
    pub async fn latest(&self, limit: i64) -> Result<Vec<AuditEntry>, sqlx::Error> {
        self.catch_up().await?;
        let rows = sqlx::query("SELECT * FROM audit_event ORDER BY seq DESC LIMIT $1")
            .bind(limit)
            .fetch_all(&self.db.pool)
            .await?;
        let mut events = rows.iter().map(AuditEntry::from_row).collect::<Result<Vec<_>, _>>()?;
        events.reverse();
        Ok(events)
    }
}

/// Chains `entries` (each with its time) onto the log inside `tx`: the
/// head taken first, which on SQLite serialises appends and on PostgreSQL
/// is taken only by the sequencer; one insert per 64 rows, the last of
/// which sets the head's new hash.
pub(crate) async fn chain_in(
    tx: &mut Transaction<'_, Any>,
    entries: &[(i64, NewAuditEntry)],
) -> Result<(), sqlx::Error> {
    if entries.is_empty() {
        return Ok(());
    }
    // It answers the last seq taken and the hash it still holds (the last
    // row's), from which the new rows are chained here.
    let head = sqlx::query("UPDATE audit_head SET seq = seq + $1 WHERE id = 1 RETURNING seq, hash")
        .bind(entries.len() as i64)
        .fetch_one(&mut **tx)
        .await?;
    let last: i64 = head.try_get("seq")?;
    let mut prev: String = head.try_get("hash")?;
    let mut chained = Vec::with_capacity(entries.len());
    for (i, (at, event)) in entries.iter().enumerate() {
        let seq = last - entries.len() as i64 + 1 + i as i64;
        let hash = link_hash(seq, *at, event, &prev);
        chained.push((seq, *at, event, std::mem::replace(&mut prev, hash.clone()), hash));
    }
    // The head's new hash is set by the statement that inserts the last
    // rows: one round trip fewer to the database per append (on SQLite two
    // statements in one query, on PostgreSQL the insert as a common table
    // expression of the update).
    let postgres = tx.backend_name() == <sqlx::Postgres as sqlx::Database>::NAME;
    let chunks: Vec<_> = chained.chunks(ROWS_PER_INSERT).collect();
    for (c, rows) in chunks.iter().enumerate() {
        let last = c + 1 == chunks.len();
        let mut sql = String::from(if postgres && last { "WITH appended AS (" } else { "" });
        sql.push_str(
            "INSERT INTO audit_event (seq, at, actor_kind, principal, action, subject, outcome, authorization_id, \
             idempotency_key, input_summary, detail, prev_hash, hash) VALUES ",
        );
        sql.push_str(&crate::store::values_placeholders(rows.len(), 13));
        if last {
            let head = format!("UPDATE audit_head SET hash = ${} WHERE id = 1", rows.len() * 13 + 1);
            sql.push_str(if postgres { ") " } else { "; " });
            sql.push_str(&head);
        }
        let mut insert = sqlx::query(&sql);
        for (seq, at, event, prev_hash, hash) in rows.iter() {
            insert = insert
                .bind(*seq)
                .bind(*at)
                .bind(&event.actor_kind)
                .bind(&event.principal)
                .bind(&event.action)
                .bind(&event.subject)
                .bind(&event.outcome)
                .bind(&event.authorization_id)
                .bind(&event.idempotency_key)
                .bind(&event.input_summary)
                .bind(&event.detail)
                .bind(prev_hash)
                .bind(hash);
        }
        if last {
            insert = insert.bind(&prev);
        }
        insert.execute(&mut **tx).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::summarize_input;

    #[test]
    fn summaries_hold_no_values() {
        let s = summarize_input(&serde_json::json!({"name": "secret release", "n": 3, "tags": ["a"]}));
        assert_eq!(s, "{n:number,name:string(14),tags:array(1)}");
        assert!(!s.contains("secret"));
    }
}
