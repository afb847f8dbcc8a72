//! Checking the hash chain. A full walk (`capstan audit verify`) reads
//! every event from the first; an online check (`GET /audit/verify`) goes
//! on from the last point a check reached (the checkpoint: its seq and
//! hash), after making sure the event there still has that hash, so a
//! caller who asks again and again costs only the events appended since.
//! Checks run one at a time in a process: a second caller waits for the
//! first and then has little left to do. Every intact check moves the
//! checkpoint to the head it reached.

use serde::Serialize;
use sqlx::Row;

use super::{Audit, Verdict, link_hash};
use crate::store::now_ms;

/// Events read and hashed at a time.
const PAGE: i64 = 1000;

/// One check at a time: concurrent callers would each walk the same events.
static CHECKING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What a check found, and how much of the chain it read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ChainCheck {
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Events this check read and hashed.
    pub checked: i64,
    /// The seq it went on from (0 for a walk from the first event).
    pub since: i64,
    /// Rows appended and not chained yet, which no check can read
    /// (PostgreSQL's sequencer chains them within a second).
    pub waiting: i64,
}

impl Audit {
    /// Walks the whole chain and reports the first broken link; an intact
    /// chain moves the checkpoint to its head.
    pub async fn verify(&self) -> Result<Verdict, sqlx::Error> {
        let _one = CHECKING.lock().await;
        self.catch_up().await?;
        Ok(self.walk(0, "genesis".into()).await?.verdict)
    }

    /// Checks what was appended since the checkpoint (everything, the
    /// first time).
    pub async fn verify_new(&self) -> Result<ChainCheck, sqlx::Error> {
        let _one = CHECKING.lock().await;
        self.catch_up().await?;
        let checkpoint =
            sqlx::query("SELECT seq, hash FROM audit_checkpoint WHERE id = 1").fetch_optional(&self.db.pool).await?;
        let Some(checkpoint) = checkpoint else { return self.walk(0, "genesis".into()).await };
        let (seq, hash): (i64, String) = (checkpoint.try_get("seq")?, checkpoint.try_get("hash")?);
        // The event the last check reached must still read as it did.
        let reached = self.list(seq - 1, 1).await?;
        let unchanged = reached
            .first()
            .is_some_and(|e| e.seq == seq && e.hash == hash && link_hash(e.seq, e.at, &e.event, &e.prev_hash) == hash);
        if seq > 0 && !unchanged {
            let reason = "it no longer reads as it did when the chain was last verified; run \
                          `capstan audit verify` for a full walk";
            let waiting = self.waiting().await?;
            let verdict = Verdict::Broken { seq, reason: reason.into() };
            return Ok(ChainCheck { verdict, checked: 1, since: seq, waiting });
        }
        self.walk(seq, hash).await
    }

    /// Verifies the events after `since`, whose last hash is `prev`.
    async fn walk(&self, since: i64, mut prev: String) -> Result<ChainCheck, sqlx::Error> {
        let waiting = self.waiting().await?;
        let broken = |seq, reason: String, checked| ChainCheck {
            verdict: Verdict::Broken { seq, reason },
            checked,
            since,
            waiting,
        };
        let mut expected_seq = since + 1;
        let mut checked = 0;
        let mut head_seq;
        loop {
            let page = self.chained(expected_seq - 1, PAGE).await?;
            if page.is_empty() {
                // Rows chained while this walk read are read too; the
                // chain ends where its head says.
                let head = sqlx::query("SELECT seq FROM audit_head WHERE id = 1").fetch_one(&self.db.pool).await?;
                head_seq = head.try_get::<i64, _>("seq")?;
                if head_seq > expected_seq - 1 && !self.chained(expected_seq - 1, 1).await?.is_empty() {
                    continue;
                }
                break;
            }
            for e in &page {
                checked += 1;
                if e.seq != expected_seq {
                    return Ok(broken(expected_seq, format!("event {expected_seq} is missing"), checked));
                }
                if e.prev_hash != prev {
                    return Ok(broken(e.seq, "its link to the previous event is wrong".into(), checked));
                }
                if link_hash(e.seq, e.at, &e.event, &e.prev_hash) != e.hash {
                    return Ok(broken(e.seq, "its contents do not match its hash".into(), checked));
                }
                prev = e.hash.clone();
                expected_seq += 1;
            }
            // Hashing a page is CPU work: let other tasks on this worker run.
            tokio::task::yield_now().await;
        }
        let reached = expected_seq - 1;
        if head_seq != reached {
            return Ok(broken(expected_seq, format!("the chain ends before its head ({head_seq})"), checked));
        }
        self.db
            .write(move |tx| {
                let prev = prev.clone();
                Box::pin(async move {
                    sqlx::query(
                        "INSERT INTO audit_checkpoint (id, seq, hash, verified_at) VALUES (1, $1, $2, $3) \
                         ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, \
                         verified_at = excluded.verified_at",
                    )
                    .bind(reached)
                    .bind(&prev)
                    .bind(now_ms())
                    .execute(&mut **tx)
                    .await
                })
            })
            .await?;
        Ok(ChainCheck { verdict: Verdict::Intact { events: reached }, checked, since, waiting })
    }
}
