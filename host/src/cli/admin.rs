//! `capstan admin set-password [--name admin]` (password on standard input),
//! `capstan admin create-key --name N --scope read [--scope execute]`,
//! `capstan admin list-keys` and `capstan admin revoke-key ID`.

use clap::Subcommand;

use super::{CommandResult, exit, failed};
use crate::config::Config;
use crate::runtime::EffectClass;
use crate::store::Db;

#[derive(Subcommand, Debug)]
pub enum AdminCommand {
    /// Set a console administrator's password, read from standard input.
    SetPassword {
        /// The administrator's name.
        #[arg(long, default_value = "admin")]
        name: String,
    },
    /// Create an API key; it is printed once and stored only as a hash.
    CreateKey {
        /// A name to recognise the key by.
        #[arg(long)]
        name: String,
        /// Effect classes the key may use: read, preview, propose, execute.
        #[arg(long = "scope", required = true, value_parser = ["read", "preview", "propose", "execute"])]
        scopes: Vec<String>,
        /// The console administrator the key belongs to; they may not
        /// approve plans the key creates.
        #[arg(long)]
        owner: Option<String>,
    },
    /// List API keys: id, name, scopes, who created them, revoked or not.
    ListKeys,
    /// Revoke an API key by id (the part after `cap_` up to the next `_`);
    /// a running server refuses it within a second.
    RevokeKey {
        /// The key's id.
        id: String,
    },
}

pub async fn run(config: Config, cmd: &AdminCommand) -> CommandResult {
    match cmd {
        AdminCommand::SetPassword { name } => {
            let mut password = String::new();
            std::io::stdin().read_line(&mut password).map_err(failed)?;
            let password = password.trim_end_matches(['\n', '\r']);
            std::fs::create_dir_all(config.data_dir()).map_err(failed)?;
            let db = Db::open(&config.database_url()).await.map_err(failed)?;
            crate::http::session::set_password(&db, name, password).await.map_err(|e| match e {
                crate::http::session::SessionError::Invalid(m) => (exit::USAGE, anyhow::anyhow!(m)),
                other => failed(other),
            })?;
            println!("password set for {name}");
            Ok(0)
        }
        AdminCommand::CreateKey { name, scopes, owner } => {
            if name.trim().is_empty() {
                return Err((exit::USAGE, anyhow::anyhow!("--name must not be empty")));
            }
            let scopes: Vec<EffectClass> = scopes.iter().filter_map(|s| EffectClass::parse(s)).collect();
            std::fs::create_dir_all(config.data_dir()).map_err(failed)?;
            let db = Db::open(&config.database_url()).await.map_err(failed)?;
            let by = match owner {
                Some(admin) => crate::principal::admin(admin),
                None => crate::principal::cli(&std::env::var("USER").unwrap_or_else(|_| "operator".into())),
            };
            let key = crate::http::keys::create(&db, name, &scopes, &by).await.map_err(failed)?;
            println!("{key}");
            Ok(0)
        }
        AdminCommand::ListKeys => {
            let db = Db::open(&config.database_url()).await.map_err(failed)?;
            for key in crate::http::keys::list(&db).await.map_err(failed)? {
                let state = if key.revoked { "revoked" } else { "active" };
                println!("{}\t{}\t{}\t{}\t{state}", key.id, key.name, key.scopes.join(","), key.created_by);
            }
            Ok(0)
        }
        AdminCommand::RevokeKey { id } => {
            let db = Db::open(&config.database_url()).await.map_err(failed)?;
            let by = crate::principal::cli(&std::env::var("USER").unwrap_or_else(|_| "operator".into()));
            if !crate::http::keys::revoke(&db, id, &by).await.map_err(failed)? {
                return Err((exit::USAGE, anyhow::anyhow!("no active API key with id {id}")));
            }
            println!("revoked {id}");
            Ok(0)
        }
    }
}
