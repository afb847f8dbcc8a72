//! `capstan worker` (a worker alone against the shared database) and
//! `capstan tasks list | enqueue | cancel | retry`.

use clap::Subcommand;

use super::{CommandResult, exit, failed};
use crate::config::Config;
use crate::store::Db;
use crate::tasks::{NewTask, TaskError, Tasks};

#[derive(Subcommand, Debug)]
pub enum TasksCommand {
    /// Newest tasks first.
    List {
        #[arg(long)]
        subject: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: i64,
        #[arg(long)]
        json: bool,
    },
    /// Queue a task, e.g. --kind invokeCapability --payload '{"capability":"release.inspect","input":{...}}'.
    Enqueue {
        #[arg(long)]
        kind: String,
        #[arg(long)]
        payload: String,
        #[arg(long)]
        subject: Option<String>,
        /// Only one queued or running task may hold this key.
        #[arg(long)]
        dedupe_key: Option<String>,
    },
    /// Cancel a queued or running task.
    Cancel { id: String },
    /// Queue a dead, failed or cancelled task again.
    Retry { id: String },
}

pub async fn run(config: Config) -> CommandResult {
    let app = crate::app::App::open(config.clone()).await.map_err(failed)?;
    let running = app.run(&config, crate::app::ProcessRole::Worker).map_err(failed)?;
    tracing::info!(loops = running.names().join(", "), "worker started");
    super::serve::shutdown().await;
    tracing::info!("worker shutting down");
    super::serve::stop_process(&app, running).await;
    Ok(0)
}

fn task_error(e: TaskError) -> (u8, anyhow::Error) {
    match e {
        TaskError::NotFound(_) | TaskError::WrongState(..) => (exit::FAILED, e.into()),
        other => failed(other),
    }
}

pub async fn tasks(config: Config, cmd: &TasksCommand) -> CommandResult {
    let db = Db::open(&config.database_url()).await.map_err(failed)?;
    let tasks = Tasks::new(db);
    match cmd {
        TasksCommand::List { subject, limit, json } => {
            let list = tasks.list(subject.as_deref(), *limit).await.map_err(failed)?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&list).map_err(failed)?);
            } else {
                for t in &list {
                    println!(
                        "{}  {:<18} {:<10} attempts {}/{}  {}",
                        t.id,
                        t.kind,
                        t.status.as_str(),
                        t.attempts,
                        t.max_attempts,
                        t.last_error.as_deref().unwrap_or("")
                    );
                }
            }
            Ok(0)
        }
        TasksCommand::Enqueue { kind, payload, subject, dedupe_key } => {
            let payload: serde_json::Value = serde_json::from_str(payload)
                .map_err(|e| (exit::USAGE, anyhow::anyhow!("payload is not valid JSON: {e}")))?;
            let user = std::env::var("USER").unwrap_or_else(|_| "operator".into());
            let new = NewTask {
                kind: kind.clone(),
                subject: subject.clone(),
                payload,
                dedupe_key: dedupe_key.clone(),
                max_attempts: config.tasks.max_attempts,
                created_by: format!("cli:{user}"),
            };
            let (task, created) = tasks.enqueue(&new).await.map_err(task_error)?;
            println!("{} {}", if created { "queued" } else { "already queued" }, task.id);
            Ok(0)
        }
        TasksCommand::Cancel { id } => {
            tasks.cancel(id).await.map_err(task_error)?;
            println!("cancelled {id}");
            Ok(0)
        }
        TasksCommand::Retry { id } => {
            tasks.retry(id).await.map_err(task_error)?;
            println!("queued {id} again");
            Ok(0)
        }
    }
}
