//! Upgrades, on both backends: a database is built one schema version at a
//! time as every earlier Capstan left it, with a row written into every
//! table each version has (runs, their messages and events, ledger rows,
//! grants, decisions, tasks, the media store, ...), and each following
//! migration is applied over that data. At the end every row is still
//! there with every value it was written with, and the rows the host reads
//! back by type — runs, ledger rows, grants, decisions — read as written.

use capstan::store::{Backend as StoreBackend, Db};
use capstan_tests::both_backends;
use capstan_tests::db::{Backend, fresh_url};
use sqlx::Row;

/// Tables holding the one row a migration seeds (the heads of the audit
/// chain and of the event log, the plugin catalog's record): a second row
/// is refused by design.
const SEEDED: &[&str] = &["audit_head", "event_head", "capability_catalog"];

/// Columns a foreign key ties to the row of another table written in the
/// same version: `(table, column, referenced table)`.
const REFERENCES: &[(&str, &str, &str)] = &[
    ("media_slot", "entity_id", "media_entity"),
    ("media_episode", "entity_id", "media_entity"),
    ("source_release", "entity_id", "media_entity"),
    ("acquisition_plan", "slot_id", "media_slot"),
    ("acquisition_plan", "source_release_id", "source_release"),
    ("download_task", "plan_id", "acquisition_plan"),
    ("release_block", "release_id", "source_release"),
    ("organization", "download_task_id", "download_task"),
    ("organization", "plan_artifact_id", "artifact"),
    ("agent_run_message", "run_id", "agent_run"),
    ("agent_run_event", "run_id", "agent_run"),
    ("agent_run_approval", "run_id", "agent_run"),
];

/// Values the host reads back by type: the words its enums take and the
/// JSON its columns hold, so a typed read after the upgrade can succeed.
const TYPED: &[(&str, &str, &str)] = &[
    ("agent_run", "mode", "plan_only"),
    ("agent_run", "status", "succeeded"),
    ("agent_run", "allowlist", "[\"inventory.query\"]"),
    ("agent_run", "plan", "null"),
    ("agent_run", "blocked_on", "config"),
    ("capability_invocation", "status", "succeeded"),
    ("capability_invocation", "effect_class", "execute"),
    ("capability_invocation", "result", "{\"ok\": true}"),
    ("automation_grant", "status", "active"),
    ("automation_grant", "action", "download.recheck"),
    ("automation_grant", "scope", "{}"),
    ("decision", "status", "open"),
    ("decision", "options", "[]"),
    ("decision", "evidence", "{}"),
    ("decision", "resolution", "{\"answer\": \"dismiss\"}"),
];

/// Where parent tables come first, so a foreign key finds its row.
const FIRST: &[&str] =
    &["media_entity", "media_slot", "source_release", "acquisition_plan", "artifact", "download_task", "agent_run"];

#[derive(Debug, Clone)]
enum Written {
    Text(String),
    Int(i64),
    Real(f64),
    Bytes(Vec<u8>),
}

/// One row as written: its table, the version that wrote it, its values.
#[derive(Debug)]
struct RowWritten {
    table: String,
    version: usize,
    values: Vec<(String, Written)>,
}

async fn tables(db: &Db) -> Vec<String> {
    let sql = match db.backend {
        StoreBackend::Sqlite => {
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
             AND name <> '_sqlx_migrations' ORDER BY name"
        }
        StoreBackend::Postgres => {
            "SELECT CAST(table_name AS TEXT) FROM information_schema.tables WHERE table_schema = current_schema() \
             AND table_type = 'BASE TABLE' AND table_name <> '_sqlx_migrations' ORDER BY table_name"
        }
    };
    let mut names: Vec<String> = sqlx::query_scalar(sql).fetch_all(&db.pool).await.unwrap();
    names.retain(|t| !SEEDED.contains(&t.as_str()));
    names.sort_by_key(|t| FIRST.iter().position(|f| f == t).unwrap_or(FIRST.len()));
    names
}

/// Each column of `table` with its type, lowercased.
async fn columns(db: &Db, table: &str) -> Vec<(String, String)> {
    match db.backend {
        StoreBackend::Sqlite => {
            let rows = sqlx::query(&format!("SELECT name, type FROM pragma_table_info('{table}')"))
                .fetch_all(&db.pool)
                .await
                .unwrap();
            rows.iter().map(|r| (r.get::<String, _>("name"), r.get::<String, _>("type").to_lowercase())).collect()
        }
        StoreBackend::Postgres => {
            let rows = sqlx::query(
                "SELECT CAST(column_name AS TEXT) AS column_name, CAST(data_type AS TEXT) AS data_type FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
            )
            .bind(table)
            .fetch_all(&db.pool)
            .await
            .unwrap();
            rows.iter()
                .map(|r| (r.get::<String, _>("column_name"), r.get::<String, _>("data_type").to_lowercase()))
                .collect()
        }
    }
}

/// The id of the row version `v` writes into `table`.
fn id_of(table: &str, v: usize) -> String {
    format!("u{v}-{table}")
}

/// Writes one row into every table version `v` has; answers them.
async fn write_rows(db: &Db, v: usize) -> Vec<RowWritten> {
    let mut written = Vec::new();
    for table in tables(db).await {
        let mut values = Vec::new();
        for (i, (column, kind)) in columns(db, &table).await.into_iter().enumerate() {
            let typed = TYPED.iter().find(|(t, c, _)| *t == table && *c == column).map(|(_, _, v)| v.to_string());
            let reference =
                REFERENCES.iter().find(|(t, c, _)| *t == table && *c == column).map(|(_, _, r)| id_of(r, v));
            let value = if kind == "integer" {
                // 32 bits on PostgreSQL.
                Written::Int((v * 100 + i) as i64)
            } else if kind.contains("int") {
                Written::Int(1_700_000_000_000 + (v * 100 + i) as i64)
            } else if kind.contains("double") || kind.contains("real") {
                Written::Real(v as f64 + 0.25)
            } else if kind == "bytea" {
                Written::Bytes(format!("u{v}-{table}-{column}\0\u{ff}").into_bytes())
            } else if column == "id" {
                Written::Text(id_of(&table, v))
            } else if let Some(value) = typed.or(reference) {
                Written::Text(value)
            } else {
                Written::Text(format!("u{v}-{table}-{column}"))
            };
            values.push((column, value));
        }
        insert(db, &table, &values).await.unwrap_or_else(|e| panic!("schema version {v}, {table}: {e}"));
        written.push(RowWritten { table, version: v, values });
    }
    written
}

fn placeholders(n: usize) -> String {
    (1..=n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

async fn insert(db: &Db, table: &str, values: &[(String, Written)]) -> Result<(), sqlx::Error> {
    let names: Vec<&str> = values.iter().map(|(c, _)| c.as_str()).collect();
    let sql = format!("INSERT INTO {table} ({}) VALUES ({})", names.join(", "), placeholders(values.len()));
    let mut query = sqlx::query(&sql);
    for (_, value) in values {
        query = match value {
            Written::Text(t) => query.bind(t.clone()),
            Written::Int(n) => query.bind(*n),
            Written::Real(x) => query.bind(*x),
            Written::Bytes(b) => query.bind(b.clone()),
        };
    }
    query.execute(&db.pool).await.map(|_| ())
}

/// How many rows of `row.table` hold every value `row` was written with.
async fn still_there(db: &Db, row: &RowWritten) -> i64 {
    let conditions: Vec<String> =
        row.values.iter().enumerate().map(|(i, (c, _))| format!("{c} = ${}", i + 1)).collect();
    let sql = format!("SELECT COUNT(*) FROM {} WHERE {}", row.table, conditions.join(" AND "));
    let mut query = sqlx::query_scalar::<_, i64>(&sql);
    for (_, value) in &row.values {
        query = match value {
            Written::Text(t) => query.bind(t.clone()),
            Written::Int(n) => query.bind(*n),
            Written::Real(x) => query.bind(*x),
            Written::Bytes(b) => query.bind(b.clone()),
        };
    }
    query.fetch_one(&db.pool).await.unwrap()
}

async fn every_migration_keeps_what_earlier_versions_wrote(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_url(backend, dir.path()).await;
    let db = Db::connect(&url).await.unwrap();
    let latest = Db::schema_version();
    assert!(latest >= 29, "the schema has its history: {latest} migrations");
    let mut written = Vec::new();
    for version in 1..latest {
        db.migrate_first(version).await.unwrap_or_else(|e| panic!("migration {version} over earlier data: {e}"));
        written.extend(write_rows(&db, version).await);
    }
    assert_eq!(db.migrate().await.unwrap(), 1, "the last migration is applied over every version's rows");

    let lost: Vec<String> = {
        let mut lost = Vec::new();
        for row in &written {
            if still_there(&db, row).await != 1 {
                lost.push(format!("{} written at schema version {}", row.table, row.version));
            }
        }
        lost
    };
    assert!(lost.is_empty(), "rows lost or changed by an upgrade: {lost:?}");
    let tables_written: std::collections::BTreeSet<&str> = written.iter().map(|r| r.table.as_str()).collect();
    for table in ["agent_run", "agent_run_message", "capability_invocation", "automation_grant", "decision", "task"] {
        assert!(tables_written.contains(table), "{table} had rows before the upgrade");
    }

    // Read back by type, as the host reads them: the oldest of each.
    let first = |table: &str| written.iter().find(|r| r.table == table).unwrap().version;
    let events = capstan::events::Events::new(db.clone());
    let runs = capstan::agent::runs::Runs::new(db.clone(), events.clone());
    let run = runs.get(&id_of("agent_run", first("agent_run"))).await.unwrap();
    assert_eq!((run.mode.as_str(), run.status.as_str()), ("plan_only", "succeeded"));
    assert_eq!(run.capability_allowlist, Some(vec!["inventory.query".to_string()]));
    let messages = runs.messages(&run.id).await.unwrap();
    assert_eq!(messages.len(), 1, "its message is there");
    let record = capstan::ledger::by_id(&db, &id_of("capability_invocation", first("capability_invocation")))
        .await
        .unwrap()
        .expect("the ledger row");
    assert_eq!(record.status, capstan::ledger::LedgerStatus::Succeeded);
    let domain = capstan::domain::Domain::with_events(db.clone(), events);
    let grant =
        domain.authz().grant(&id_of("automation_grant", first("automation_grant"))).await.unwrap().expect("the grant");
    assert_eq!(grant.action, "download.recheck");
    let decision = domain.decision(&id_of("decision", first("decision"))).await.unwrap();
    assert_eq!(decision.status, capstan::domain::DecisionStatus::Open);
}

both_backends!(every_migration_keeps_what_earlier_versions_wrote);
