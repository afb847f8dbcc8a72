//! `capstan migrate` and `capstan audit verify`.

use clap::Subcommand;

use super::{CommandResult, exit, failed};
use crate::audit::{Audit, Verdict};
use crate::config::Config;
use crate::store::Db;

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Check the hash chain and report the first broken link.
    Verify,
}

pub async fn migrate(config: Config) -> CommandResult {
    std::fs::create_dir_all(config.data_dir()).map_err(failed)?;
    let db = Db::connect(&config.database_url()).await.map_err(failed)?;
    let applied = db.migrate().await.map_err(failed)?;
    println!("database is up to date ({applied} migration(s) applied)");
    Ok(0)
}

pub async fn run(config: Config, cmd: &AuditCommand) -> CommandResult {
    match cmd {
        AuditCommand::Verify => {
            let db = Db::open(&config.database_url()).await.map_err(failed)?;
            let audit = Audit::new(db);
            match audit.verify().await.map_err(failed)? {
                Verdict::Intact { events } => {
                    let waiting = audit.waiting().await.map_err(failed)?;
                    if waiting > 0 {
                        println!("audit chain intact: {events} event(s), {waiting} appended and not chained yet");
                    } else {
                        println!("audit chain intact: {events} event(s)");
                    }
                    Ok(0)
                }
                Verdict::Broken { seq, reason } => {
                    println!("audit chain broken at event {seq}: {reason}");
                    Ok(exit::FAILED)
                }
            }
        }
    }
}
