//! `capstan invoke <id> --input <json|@file>`: one call through the invoke
//! path (schema, gate, ledger, audit), printed with its status. Exit 0 for
//! succeeded or pending, 1 for failed (denials included), 3 for unknown, 2
//! for bad usage.

use clap::Args;

use super::{CommandResult, exit, failed};
use crate::config::Config;
use crate::pipeline::{InvokeError, Origin};
use crate::runtime::{EffectClass, Status};

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
    /// Print the full result as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(super) fn read_input(raw: &str) -> anyhow::Result<serde_json::Value> {
    let text = match raw.strip_prefix('@') {
        Some(path) => {
            std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read input file {path}: {e}"))?
        }
        None => raw.to_string(),
    };
    serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("input is not valid JSON: {e}"))
}

pub async fn run(config: Config, args: &InvokeArgs) -> CommandResult {
    let input = read_input(&args.input).map_err(|e| (exit::USAGE, e))?;
    let class = EffectClass::parse(&args.grant).ok_or_else(|| (exit::USAGE, anyhow::anyhow!("bad --grant")))?;
    let capabilities = crate::app::App::open(config).await.map_err(failed)?.caps().clone();
    let inv = match capabilities.invoke(&Origin::cli(class), &args.id, &input).await {
        Ok(inv) => inv,
        Err(e @ InvokeError::NotFound(_)) => return Err((exit::USAGE, e.into())),
        Err(e) => return Err(failed(e)),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&inv).map_err(failed)?);
    } else {
        println!("status: {}", serde_json::to_value(inv.status).map_err(failed)?.as_str().unwrap_or(""));
        if let Some(output) = &inv.output {
            println!("{}", serde_json::to_string_pretty(output).map_err(failed)?);
        }
        if let Some(error) = &inv.error {
            println!("{}: {}", error.kind, error.message);
        }
        for denial in &inv.denials {
            println!("denied: {}", denial.reason);
        }
        if inv.replayed {
            println!("(recorded result; nothing ran now)");
        }
    }
    Ok(match inv.status {
        Status::Succeeded | Status::Pending => 0,
        Status::Failed => exit::FAILED,
        Status::Unknown => exit::UNKNOWN,
    })
}
