//! `capstan skills list | check`.

use std::path::PathBuf;

use clap::Subcommand;

use super::{CommandResult, exit, failed};
use crate::config::Config;
use crate::runtime::Runtime;
use crate::skills::{SkillSource, Skills};

#[derive(Subcommand, Debug)]
pub enum SkillsCommand {
    /// List the skills runs may read, and the skill folders refused with why.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Check one skill folder (or its SKILL.md) the way the host would: its
    /// front matter, its name, and that every tool it lists is loaded.
    Check {
        /// The skill's folder, or its SKILL.md.
        path: PathBuf,
    },
}

pub async fn run(config: Config, cmd: &SkillsCommand) -> CommandResult {
    let skills = Skills::new(config.skills_dir());
    let runtime = Runtime::start_listing(config, None, &capstan_builtins::BUILT_INS).await.map_err(failed)?;
    let snapshot = runtime.snapshot();
    match cmd {
        SkillsCommand::List { json } => {
            let set = tokio::task::spawn_blocking(move || skills.current(&snapshot)).await.map_err(failed)?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&set).map_err(failed)?);
                return Ok(0);
            }
            println!("{:<28} {:<9} {:<48} TRIGGERS", "NAME", "SOURCE", "TOOLS");
            for skill in &set.skills {
                let source = match skill.source {
                    SkillSource::BuiltIn => "built-in",
                    SkillSource::Directory { .. } => "folder",
                };
                let triggers = if skill.triggers.is_empty() { "-".to_string() } else { skill.triggers.join(",") };
                println!("{:<28} {source:<9} {:<48} {triggers}", skill.name, skill.tools.join(","));
            }
            for refused in &set.refused {
                println!("refused {}: {}", refused.folder, refused.reason);
            }
            Ok(0)
        }
        SkillsCommand::Check { path } => {
            let path = path.clone();
            let checked =
                tokio::task::spawn_blocking(move || crate::skills::check(&path, &snapshot)).await.map_err(failed)?;
            match checked {
                Ok(skill) => {
                    println!("{}: ready", skill.name);
                    println!("  {}", skill.description);
                    println!("  tools: {}", skill.tools.join(", "));
                    if !skill.triggers.is_empty() {
                        println!("  the playbook for: {}", skill.triggers.join(", "));
                    }
                    Ok(0)
                }
                Err(reason) => Err((exit::FAILED, anyhow::anyhow!("refused: {reason}"))),
            }
        }
    }
}
