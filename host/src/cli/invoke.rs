//! `capstan invoke <id> --input <json|@file>`: one call through the runtime,
//! printed with its status. Exit 0 for succeeded or pending, 1 for failed
//! (denials included), 3 for unknown, 2 for bad usage.

use clap::Args;

use super::{CommandResult, exit, failed};
use crate::config::Config;
use crate::runtime::{Actor, CallOutcome, EffectClass, Grant, Runtime, Status};

#[derive(Args, Debug)]
pub struct InvokeArgs {
    /// Capability id, e.g. release.inspect.
    pub id: String,
    /// Input JSON, or @path to read it from a file.
    #[arg(long)]
    pub input: String,
    /// Highest effect class this call may use.
    #[arg(long, default_value = "read", value_parser = ["read", "preview", "propose", "execute"])]
    pub grant: String,
    /// Print the full call report as JSON.
    #[arg(long)]
    pub json: bool,
}

fn read_input(raw: &str) -> anyhow::Result<String> {
    let text = match raw.strip_prefix('@') {
        Some(path) => {
            std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read input file {path}: {e}"))?
        }
        None => raw.to_string(),
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("input is not valid JSON: {e}"))?;
    Ok(value.to_string())
}

pub async fn run(config: Config, args: &InvokeArgs) -> CommandResult {
    let input = read_input(&args.input).map_err(|e| (exit::USAGE, e))?;
    let class = EffectClass::parse(&args.grant).ok_or_else(|| (exit::USAGE, anyhow::anyhow!("bad --grant")))?;
    let runtime = Runtime::start(config).await.map_err(failed)?;
    let report =
        runtime.call(&args.id, &input, Grant::new(Actor::Cli, class)).await.map_err(|e| (exit::USAGE, e.into()))?;
    let status = report.status();
    if args.json {
        let mut value = serde_json::to_value(&report).map_err(failed)?;
        value["status"] = serde_json::to_value(status).map_err(failed)?;
        println!("{}", serde_json::to_string_pretty(&value).map_err(failed)?);
    } else {
        println!("status: {}", serde_json::to_value(status).map_err(failed)?.as_str().unwrap_or(""));
        match &report.outcome {
            CallOutcome::Succeeded { output } | CallOutcome::Pending { output } => {
                println!("{}", serde_json::to_string_pretty(output).map_err(failed)?);
            }
            CallOutcome::Failed { failure } => println!("{}: {}", failure.kind, failure.message),
            CallOutcome::Trapped { trap, message } => {
                println!("{}: {message}", serde_json::to_value(trap).map_err(failed)?.as_str().unwrap_or(""))
            }
        }
        for denial in &report.denials {
            println!("denied: {}", denial.reason);
        }
    }
    Ok(match status {
        Status::Succeeded | Status::Pending => 0,
        Status::Failed => exit::FAILED,
        Status::Unknown => exit::UNKNOWN,
    })
}
