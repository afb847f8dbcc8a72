//! `capstan library add | list | remove`: what the library wants, from the
//! command line. Adding and removing are calls of `library.want` through
//! the one invoke path, as the operator; listing reads the domain store.

use clap::Subcommand;
use serde_json::{Value, json};

use super::{CommandResult, exit, failed};
use crate::config::Config;
use crate::pipeline::Origin;
use crate::runtime::{EffectClass, Status};

#[derive(Subcommand, Debug)]
pub enum LibraryCommand {
    /// Want a movie, or seasons of a series, by TMDB id.
    Add {
        /// The TMDB id (see `capstan invoke catalog.lookup`).
        #[arg(long)]
        tmdb_id: u64,
        /// movie or tv.
        #[arg(long, value_parser = ["movie", "tv"])]
        kind: String,
        /// 2160p, 1080p, 720p, ...
        #[arg(long)]
        quality: String,
        /// A quality.* policy that judges releases.
        #[arg(long)]
        profile: Option<String>,
        /// A season to want (repeat for several; default all but specials).
        #[arg(long = "season")]
        seasons: Vec<u32>,
        #[arg(long)]
        json: bool,
    },
    /// What the library holds and wants.
    List {
        /// movie or tv.
        #[arg(long, value_parser = ["movie", "tv"])]
        kind: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Stop wanting a title (by its library entity id), or one season.
    Remove {
        entity_id: String,
        #[arg(long)]
        season: Option<u32>,
        #[arg(long)]
        json: bool,
    },
}

fn slot_line(slot: &Value) -> String {
    let season = slot["season"].as_i64().map(|s| format!("season {s} ")).unwrap_or_default();
    let profile = slot["profile"].as_str().map(|p| format!(" ({p})")).unwrap_or_default();
    let episodes = episode_words(&slot["episodes"]);
    let upgrade = upgrade_words(&slot["upgrade"]);
    format!(
        "{season}{} {}{profile}{episodes}{upgrade}",
        slot["quality"].as_str().unwrap_or(""),
        slot["status"].as_str().unwrap_or("")
    )
}

/// A season's episodes as `  (4 of 10 episodes, 2 missing, 4 not aired)`;
/// empty when the slot has no episode counts.
fn episode_words(e: &Value) -> String {
    let n = |key: &str| e[key].as_i64().unwrap_or(0);
    if e.is_null() {
        return String::new();
    }
    let wanted = n("total") - n("unmonitored");
    let mut parts = vec![format!("{} of {wanted} episode{}", n("have"), if wanted == 1 { "" } else { "s" })];
    if n("missing") > 0 {
        parts.push(format!("{} missing", n("missing")));
    }
    if n("notAired") > 0 {
        parts.push(format!("{} not aired", n("notAired")));
    }
    format!("  ({})", parts.join(", "))
}

/// Files below the profile's cutoff as `  upgrading: have 720p, cutoff
/// 1080p` (or `  upgrading 3 episodes to 1080p`); empty when none are.
fn upgrade_words(u: &Value) -> String {
    let Some(cutoff) = u["cutoff"].as_str() else { return String::new() };
    match u["below"].as_i64().unwrap_or(0) {
        n if n > 1 => format!("  upgrading {n} episodes to {cutoff}"),
        _ => format!("  upgrading: have {}, cutoff {cutoff}", u["have"].as_str().unwrap_or("an unknown quality")),
    }
}

fn entity_line(entity: &Value) -> String {
    let year = entity["year"].as_i64().map(|y| format!(" ({y})")).unwrap_or_default();
    format!(
        "{}  {}{year}  [{}]",
        entity["id"].as_str().unwrap_or(""),
        entity["title"].as_str().unwrap_or(""),
        entity["kind"].as_str().unwrap_or("")
    )
}

async fn want(config: Config, input: Value, json_out: bool) -> CommandResult {
    let capabilities = crate::app::App::open(config).await.map_err(failed)?.caps().clone();
    let inv = capabilities.invoke(&Origin::cli(EffectClass::Execute), "library.want", &input).await.map_err(failed)?;
    if json_out {
        println!("{}", serde_json::to_string_pretty(&inv).map_err(failed)?);
    }
    match (inv.status, &inv.output, &inv.error) {
        (Status::Succeeded, Some(out), _) => {
            if !json_out {
                println!("{}", entity_line(&out["entity"]));
                for slot in out["slots"].as_array().into_iter().flatten() {
                    println!("  {}", slot_line(slot));
                }
            }
            Ok(0)
        }
        (_, _, Some(e)) => {
            if !json_out {
                eprintln!("error: {}: {}", e.kind, e.message);
            }
            Ok(exit::FAILED)
        }
        _ => Ok(exit::UNKNOWN),
    }
}

pub async fn run(config: Config, cmd: &LibraryCommand) -> CommandResult {
    match cmd {
        LibraryCommand::Add { tmdb_id, kind, quality, profile, seasons, json } => {
            let seasons = (!seasons.is_empty()).then(|| seasons.clone());
            let input = json!({"action": "add", "tmdbId": tmdb_id, "kind": kind, "quality": quality,
                "profile": profile, "seasons": seasons});
            want(config, input, *json).await
        }
        LibraryCommand::Remove { entity_id, season, json } => {
            want(config, json!({"action": "remove", "entityId": entity_id, "season": season}), *json).await
        }
        LibraryCommand::List { kind, json } => {
            let app = crate::app::App::open(config).await.map_err(failed)?;
            let kind = kind.as_deref().map(crate::domain::EntityKind::parse).transpose().map_err(failed)?;
            let inventory = app.services().domain.inventory(kind, 1000).await.map_err(failed)?;
            let inventory = serde_json::to_value(inventory).map_err(failed)?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&inventory).map_err(failed)?);
                return Ok(0);
            }
            let items = inventory["items"].as_array().cloned().unwrap_or_default();
            if items.is_empty() {
                println!("the library holds and wants nothing yet");
            }
            for item in items {
                println!("{}", entity_line(&item["entity"]));
                for slot in item["slots"].as_array().into_iter().flatten() {
                    println!("  {}", slot_line(slot));
                }
            }
            Ok(0)
        }
    }
}
