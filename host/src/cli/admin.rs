//! `capstan admin create-key --name N --scope read [--scope execute]`.

use clap::Subcommand;

use super::{CommandResult, exit, failed};
use crate::config::Config;
use crate::runtime::EffectClass;
use crate::store::Db;

#[derive(Subcommand, Debug)]
pub enum AdminCommand {
    /// Create an API key; it is printed once and stored only as a hash.
    CreateKey {
        /// A name to recognise the key by.
        #[arg(long)]
        name: String,
        /// Effect classes the key may use: read, preview, propose, execute.
        #[arg(long = "scope", required = true, value_parser = ["read", "preview", "propose", "execute"])]
        scopes: Vec<String>,
    },
}

pub async fn run(config: Config, cmd: &AdminCommand) -> CommandResult {
    match cmd {
        AdminCommand::CreateKey { name, scopes } => {
            if name.trim().is_empty() {
                return Err((exit::USAGE, anyhow::anyhow!("--name must not be empty")));
            }
            let scopes: Vec<EffectClass> = scopes.iter().filter_map(|s| EffectClass::parse(s)).collect();
            std::fs::create_dir_all(config.data_dir()).map_err(failed)?;
            let db = Db::open(&config.database_url()).await.map_err(failed)?;
            let user = std::env::var("USER").unwrap_or_else(|_| "operator".into());
            let key = crate::http::keys::create(&db, name, &scopes, &format!("cli:{user}")).await.map_err(failed)?;
            println!("{key}");
            Ok(0)
        }
    }
}
