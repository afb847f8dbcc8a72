//! What PostgreSQL did during a benchmark run, read from
//! `pg_stat_statements` and `pg_stat_database`: statements, transactions
//! and database time per unit of work, and which statements took the time.
//! These are the figures that carry to a database on its own machine (a
//! shared two-core box hides them behind CPU contention). The throwaway
//! server `scripts/bench.sh` starts loads the module; on a server without
//! it, [`StatementStats::begin`] answers `None` and the report is left out.

use sqlx::AnyPool;

/// Counters at the start of a run on one database.
pub struct StatementStats {
    pool: AnyPool,
    commits: i64,
}

/// Statements that are the benchmark's own, not the work it measures: its
/// progress polling and these reports. (Its checks after the run come
/// after the report, so no filter has to tell them from Capstan's own
/// reads of the same tables.)
const OWN: &[&str] = &["SELECT COUNT(*) FROM task WHERE kind", "pg_stat_"];

impl StatementStats {
    /// Resets the server's statement counters and notes this database's
    /// commits; `None` when the server does not load `pg_stat_statements`.
    pub async fn begin(pool: &AnyPool) -> Option<StatementStats> {
        sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements").execute(pool).await.ok()?;
        sqlx::query("SELECT pg_stat_statements_reset()::text").execute(pool).await.ok()?;
        let commits = Self::commits(pool).await?;
        Some(StatementStats { pool: pool.clone(), commits })
    }

    async fn commits(pool: &AnyPool) -> Option<i64> {
        // The statistics views show a snapshot per transaction; a fresh
        // one is read after clearing it.
        sqlx::query("SELECT pg_stat_clear_snapshot()::text").execute(pool).await.ok()?;
        sqlx::query_scalar::<_, i64>(
            "SELECT xact_commit::bigint FROM pg_stat_database WHERE datname = current_database()",
        )
        .fetch_one(pool)
        .await
        .ok()
    }

    /// Says, per unit of work (`units` of them ran): statements,
    /// committed transactions, milliseconds the database spent executing,
    /// then the statements that took most of that time; lines to print.
    pub async fn report(&self, units: usize, what: &str) -> String {
        use std::fmt::Write;
        let rows: Vec<(String, i64, f64)> = sqlx::query_as(
            "SELECT query, calls::bigint, total_exec_time::float8 FROM pg_stat_statements \
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
             ORDER BY total_exec_time DESC",
        )
        .fetch_all(&self.pool)
        .await
        .unwrap_or_default();
        let rows: Vec<_> = rows.into_iter().filter(|(q, _, _)| !OWN.iter().any(|own| q.contains(own))).collect();
        let commits = Self::commits(&self.pool).await.unwrap_or(self.commits) - self.commits;
        let per = |n: f64| n / units.max(1) as f64;
        let calls: i64 = rows.iter().map(|r| r.1).sum();
        let millis: f64 = rows.iter().map(|r| r.2).sum();
        let mut said = String::new();
        let _ = writeln!(
            said,
            "  database per {what}: {:.1} statements, {:.1} committed transactions, {:.3} ms executing",
            per(calls as f64),
            per(commits as f64),
            per(millis),
        );
        for (query, calls, total) in rows.iter().take(8) {
            let text: String = query.split_whitespace().collect::<Vec<_>>().join(" ");
            let text: String = text.chars().take(110).collect();
            let _ = writeln!(
                said,
                "    {:>5.1}% {:>5.2}/{what} {:>7.3} ms each  {text}",
                100.0 * total / millis.max(f64::MIN_POSITIVE),
                per(*calls as f64),
                total / (*calls).max(1) as f64,
            );
        }
        said
    }
}
