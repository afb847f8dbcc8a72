//! `capstan capabilities list | check | accept | test`.

use std::path::PathBuf;

use clap::Subcommand;
use serde::Serialize;

use super::{CommandResult, exit, failed};
use crate::config::Config;
use std::sync::Arc;

use crate::plugin_catalog::PluginCatalog;
use crate::runtime::{Catalog, Descriptor, EffectClass, Loaded, Runtime};

#[derive(Subcommand, Debug)]
pub enum CapabilitiesCommand {
    /// List loaded, held and refused components.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Load a component file the way the host would and print its descriptor.
    Check {
        /// The .wasm component to check.
        file: PathBuf,
    },
    /// Allow a held replacement (raised label or new services) to take effect.
    Accept {
        /// Capability id, e.g. release.inspect.
        id: String,
    },
    /// Run a component once in a throwaway host and print what it did:
    /// its result, every host import it called and the files it changed.
    Test(super::capability_test::TestArgs),
}

/// One row of `capabilities list`.
#[derive(Debug, Serialize)]
pub struct Row {
    pub id: String,
    pub version: u32,
    pub label: EffectClass,
    /// Highest effect class among the component's actual imports.
    pub effect_class: EffectClass,
    pub services: Vec<String>,
    pub digest: String,
    pub source: String,
    /// `active`, or `held: <reason>`.
    pub status: String,
}

fn row(l: &Loaded, status: String) -> Row {
    let source = match &l.source {
        crate::runtime::Source::BuiltIn(_) => "built-in".to_string(),
        crate::runtime::Source::Directory(p) | crate::runtime::Source::Retained(p) => p.display().to_string(),
        crate::runtime::Source::External(server) => format!("MCP server {server}"),
    };
    Row {
        id: l.descriptor.id.clone(),
        version: l.descriptor.version,
        label: l.descriptor.label,
        effect_class: l.imports.class,
        services: l.descriptor.services.clone(),
        digest: l.digest.clone(),
        source,
        status,
    }
}

/// What `capabilities check` prints on success.
#[derive(Serialize)]
struct CheckedFile<'a> {
    descriptor: &'a Descriptor,
    digest: &'a str,
    effect_class: EffectClass,
    imports: &'a [String],
    verify: bool,
}

pub async fn run(config: Config, cmd: &CapabilitiesCommand) -> CommandResult {
    match cmd {
        CapabilitiesCommand::List { json } => list(config, *json).await,
        CapabilitiesCommand::Check { file } => check(config, file).await,
        CapabilitiesCommand::Test(args) => super::capability_test::run(config, args).await,
        CapabilitiesCommand::Accept { id } => {
            let catalog = catalog_of(&config).await.map_err(failed)?;
            let runtime =
                Runtime::start_with(config, None, catalog, &capstan_builtins::BUILT_INS).await.map_err(failed)?;
            let digest = runtime.accept(id).await.map_err(failed)?;
            println!("accepted {id} ({})", &digest[..12]);
            Ok(0)
        }
    }
}

/// The cluster's plugin catalog when the database is PostgreSQL, where
/// the plugins and what was accepted are the cluster's, not this folder's.
async fn catalog_of(config: &Config) -> anyhow::Result<Option<Arc<dyn Catalog>>> {
    let url = config.database_url();
    if !url.starts_with("postgres") {
        return Ok(None);
    }
    let db = crate::store::Db::connect(&url).await?;
    Ok(PluginCatalog::for_db(&db).map(|c| Arc::new(c) as Arc<dyn Catalog>))
}

/// How long `list` waits for plugins to load from the compiled-code cache
/// before it shows the ones still compiling as such.
const LIST_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

async fn list(config: Config, json: bool) -> CommandResult {
    let catalog = catalog_of(&config).await.map_err(failed)?;
    let runtime = Runtime::start_listing(config, catalog, &capstan_builtins::BUILT_INS).await.map_err(failed)?;
    let waiting = std::time::Instant::now();
    while !runtime.snapshot().compiling.is_empty() && waiting.elapsed() < LIST_WAIT {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let snapshot = runtime.snapshot();
    let mut rows: Vec<Row> = snapshot.active.values().map(|l| row(l, "active".into())).collect();
    rows.extend(snapshot.held.values().map(|h| row(&h.candidate, format!("held: {}", h.reason))));
    if json {
        let out =
            serde_json::json!({ "capabilities": rows, "refused": snapshot.refused, "compiling": snapshot.compiling });
        println!("{}", serde_json::to_string_pretty(&out).map_err(failed)?);
        return Ok(0);
    }
    println!(
        "{:<22} {:>3} {:<8} {:<8} {:<20} {:<12} {:<10} STATUS",
        "ID", "VER", "LABEL", "CLASS", "SERVICES", "DIGEST", "SOURCE"
    );
    for r in &rows {
        println!(
            "{:<22} {:>3} {:<8} {:<8} {:<20} {:<12} {:<10} {}",
            r.id,
            r.version,
            r.label.as_str(),
            r.effect_class.as_str(),
            if r.services.is_empty() { "-".to_string() } else { r.services.join(",") },
            &r.digest[..12],
            if r.source == "built-in" { "built-in" } else { "dir" },
            r.status
        );
    }
    for refusal in &snapshot.refused {
        println!("refused {}: {}", refusal.file.display(), refusal.reason);
    }
    for compiling in &snapshot.compiling {
        println!(
            "compiling {} ({:.1} MB): not loaded within two seconds, so not compiled before; \
             a running `capstan serve` compiles it in the background and keeps the code",
            compiling.file.display(),
            compiling.bytes as f64 / 1e6
        );
    }
    Ok(0)
}

async fn check(config: Config, file: &PathBuf) -> CommandResult {
    let bytes =
        std::fs::read(file).map_err(|e| (exit::USAGE, anyhow::anyhow!("cannot read {}: {e}", file.display())))?;
    let runtime = Runtime::new(config, &capstan_builtins::BUILT_INS).map_err(failed)?;
    match runtime.check(&bytes, file.clone()).await {
        Ok(loaded) => {
            let out = CheckedFile {
                descriptor: &loaded.descriptor,
                digest: &loaded.digest,
                effect_class: loaded.imports.class,
                imports: &loaded.imports.imports,
                verify: loaded.has_verifier,
            };
            println!("{}", serde_json::to_string_pretty(&out).map_err(failed)?);
            Ok(0)
        }
        Err(reason) => Err(failed(anyhow::anyhow!("{} refused: {reason}", file.display()))),
    }
}
