//! The host's Prometheus metrics, served at `/metrics`. Two kinds: what
//! this process counted since it started (invokes by capability and
//! status, denials by capability and import, HTTP requests' latency by
//! route and status), and, read from the database at each scrape, the
//! state every process shares (ledger rows by outcome, the task queue's
//! depth and oldest wait, agent runs by status, live processes). Label
//! values are capability ids, route templates and fixed words, never
//! anything a caller can make up, so the series stay few.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::ledger::{Ledger, LedgerStatus};
use crate::store::Db;
use crate::tasks::Tasks;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InvokeLabels {
    capability: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DenialLabels {
    capability: String,
    import: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TaskLabels {
    kind: String,
    status: String,
}

type HistogramFamily = Family<HttpLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 1 ms to about 16 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// This process's counters; cheap to share.
pub struct Metrics {
    invocations: Family<InvokeLabels, Counter>,
    denials: Family<DenialLabels, Counter>,
    http: HistogramFamily,
    sign_ins: Family<OutcomeLabels, Counter>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            invocations: Family::default(),
            denials: Family::default(),
            http: Family::new_with_constructor(latency_histogram as fn() -> Histogram),
            sign_ins: Family::default(),
        }
    }
}

impl Metrics {
    /// One finished invoke of `capability` with `status`, and the imports
    /// it was denied.
    pub fn invoked<'a>(&self, capability: &str, status: &str, denied_imports: impl Iterator<Item = &'a str>) {
        let labels = InvokeLabels { capability: capability.to_string(), status: status.to_string() };
        self.invocations.get_or_create(&labels).inc();
        for import in denied_imports {
            let labels = DenialLabels { capability: capability.to_string(), import: import.to_string() };
            self.denials.get_or_create(&labels).inc();
        }
    }

    /// One HTTP request answered: `route` is the matched route's template.
    pub fn answered(&self, method: &str, route: &str, status: u16, took: Duration) {
        let labels = HttpLabels { method: method.to_string(), route: route.to_string(), status };
        self.http.get_or_create(&labels).observe(took.as_secs_f64());
    }

    /// One console sign-in attempt: `succeeded`, `failed`, `paused`,
    /// `busy`, `no_administrator` or `error`.
    pub fn signed_in(&self, outcome: &'static str) {
        self.sign_ins.get_or_create(&OutcomeLabels { outcome }).inc();
    }

    /// Every metric in the Prometheus text format, the shared ones read
    /// from `db` now; every status in `run_statuses` is shown, 0 when none.
    pub async fn render(
        &self,
        db: &Db,
        ledger: &Ledger,
        tasks: &Tasks,
        run_statuses: &[&str],
    ) -> Result<String, sqlx::Error> {
        let mut registry = Registry::with_prefix("capstan");
        registry.register(
            "invocations",
            "Invokes finished by this process, by capability and status",
            self.invocations.clone(),
        );
        registry.register(
            "denials",
            "Host imports denied to calls, by capability and import (at most 32 counted per call)",
            self.denials.clone(),
        );
        registry.register("http_request_duration_seconds", "HTTP requests by route and status", self.http.clone());
        registry.register(
            "sign_ins",
            "Console sign-in attempts by outcome (paused and busy ones were refused before any check)",
            self.sign_ins.clone(),
        );
        shared_state(&mut registry, db, ledger, tasks, run_statuses).await?;
        let mut text = String::new();
        encode(&mut text, &registry).map_err(|e| sqlx::Error::Protocol(format!("cannot encode the metrics: {e}")))?;
        Ok(text)
    }
}

/// Gauges of what the database holds now.
async fn shared_state(
    registry: &mut Registry,
    db: &Db,
    ledger: &Ledger,
    tasks: &Tasks,
    run_statuses: &[&str],
) -> Result<(), sqlx::Error> {
    let ledger_rows = grouped(db, "SELECT status, COUNT(*) FROM capability_invocation GROUP BY status").await?;
    let ledger_statuses: Vec<&str> = LedgerStatus::ALL.iter().map(|s| s.as_str()).collect();
    let ledger_gauges = status_gauges(&ledger_statuses, ledger_rows);
    registry.register("ledger_invocations", "Ledger rows by outcome (every process)", ledger_gauges);
    let runs = grouped(db, "SELECT status, COUNT(*) FROM agent_run GROUP BY status").await?;
    registry.register("agent_runs", "Agent runs by status", status_gauges(run_statuses, runs));

    let queue = tasks.queue().await?;
    let tasks: Family<TaskLabels, Gauge> = Family::default();
    for (kind, statuses) in &queue.by_kind {
        for (status, n) in statuses {
            tasks.get_or_create(&TaskLabels { kind: kind.clone(), status: status.clone() }).set(*n);
        }
    }
    registry.register("tasks", "Tasks by kind and status", tasks);
    registry.register("task_queue_ready", "Queued tasks due now", gauge(queue.ready));
    registry.register("task_queue_scheduled", "Queued tasks due later", gauge(queue.scheduled));
    let oldest = queue.oldest_ready_ms.unwrap_or(0) / 1000;
    registry.register("task_queue_oldest_ready_seconds", "How long the oldest ready task has waited", gauge(oldest));
    registry.register("live_processes", "Processes with a current heartbeat", gauge(ledger.live_processes().await?));
    Ok(())
}

async fn grouped(db: &Db, sql: &str) -> Result<Vec<(String, i64)>, sqlx::Error> {
    sqlx::query_as(sql).fetch_all(&db.pool).await
}

/// A gauge per status: each of `known` (0 when none), and any other found.
fn status_gauges(known: &[&str], rows: Vec<(String, i64)>) -> Family<StatusLabels, Gauge> {
    let family: Family<StatusLabels, Gauge> = Family::default();
    for status in known {
        family.get_or_create(&StatusLabels { status: status.to_string() }).set(0);
    }
    for (status, n) in rows {
        family.get_or_create(&StatusLabels { status }).set(n);
    }
    family
}

fn gauge(value: i64) -> Gauge {
    let gauge: Gauge = Gauge::default();
    gauge.set(value);
    gauge
}
