//! `capstan capabilities test FILE.wasm --input JSON`: runs one component
//! under the real runtime, in a throwaway data directory that is removed
//! afterwards, and prints what it did. The host interfaces answer as they
//! would in `capstan serve`: file roots are copies of `--files`' folders,
//! services are the `--service` addresses, the library, drafts and records
//! are a fresh empty store. Every host import the component made is
//! recorded with the host's answer, and the file roots are compared before
//! and after, so an author in any language sees logs, file operations and
//! requests without writing a host of their own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use super::{CommandResult, exit, failed};
use crate::config::{Auth, Config, ServiceConfig};
use crate::pipeline::check_input;
use crate::runtime::{Actor, CallOutcome, Grant, HostCall, Status, StopSignal};

#[derive(Args, Debug)]
pub struct TestArgs {
    /// The .wasm component to run.
    pub file: PathBuf,
    /// Input JSON, or @path to read it from a file.
    #[arg(long)]
    pub input: String,
    /// A folder whose subfolders become the file roots of the same names
    /// (`DIR/downloads` → root `downloads`). They are copied first: the
    /// component works on the copies, and the changes are reported.
    #[arg(long, value_name = "DIR")]
    pub files: Option<PathBuf>,
    /// An outbound service the component may name: NAME=URL. Repeatable.
    #[arg(long = "service", value_name = "NAME=URL")]
    pub services: Vec<String>,
    /// A setting the component reads with `setting(NAME)`: NAME=VALUE.
    /// Repeatable.
    #[arg(long = "setting", value_name = "NAME=VALUE")]
    pub settings: Vec<String>,
}

/// What `capabilities test` prints.
#[derive(Serialize)]
struct Report {
    capability: String,
    label: String,
    status: Status,
    outcome: CallOutcome,
    /// Every host import the component called, in order, with the answer.
    host_calls: Vec<HostCall>,
    #[serde(skip_serializing_if = "is_zero")]
    host_calls_not_recorded: u64,
    /// Files created, changed or removed under the roots, as `root:path`.
    files: FileChanges,
    elapsed_ms: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize, Default)]
struct FileChanges {
    created: Vec<String>,
    changed: Vec<String>,
    removed: Vec<String>,
}

/// `NAME=VALUE` split in two; `form` is how the flag's value is written
/// (`--service NAME=URL`) for the error.
fn pair(text: &str, form: &str) -> Result<(String, String), (u8, anyhow::Error)> {
    text.split_once('=')
        .filter(|(name, value)| !name.is_empty() && !value.is_empty())
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .ok_or_else(|| (exit::USAGE, anyhow::anyhow!("{form} expected, not {text:?}")))
}

pub async fn run(user: Config, args: &TestArgs) -> CommandResult {
    let usage = |e: anyhow::Error| (exit::USAGE, e);
    let cap = user.max_component_bytes();
    let size = std::fs::metadata(&args.file)
        .map_err(|e| usage(anyhow::anyhow!("cannot read {}: {e}", args.file.display())))?
        .len();
    if size > cap {
        return Err(failed(anyhow::anyhow!(
            "{} is {size} bytes, over the cap of {cap} bytes for a component file (max_component_bytes)",
            args.file.display()
        )));
    }
    let bytes =
        std::fs::read(&args.file).map_err(|e| usage(anyhow::anyhow!("cannot read {}: {e}", args.file.display())))?;
    let input = super::invoke::read_input(&args.input).map_err(usage)?;
    let scratch = tempfile::tempdir().map_err(failed)?;
    let mut config = Config { data_dir: Some(scratch.path().join("data")), ..Config::default() };
    // A component already compiled for the operator's data directory (a
    // Python one takes seconds) is taken from its cache.
    if user.data_dir().is_dir() {
        config.cache_dir = Some(user.cache_dir());
    }
    // The same limits as `serve` gives it; nothing else of the operator's
    // configuration (services, roots, settings, secrets) comes along.
    config.limits = user.limits;
    config.max_component_bytes = user.max_component_bytes;
    for raw in &args.services {
        let (name, url) = pair(raw, "--service NAME=URL")?;
        let service = ServiceConfig {
            base_url: url,
            auth: Auth::None,
            operations: Vec::new(),
            timeout_ms: 15_000,
            response_cap_bytes: 8 << 20,
        };
        service.validate(&name).map_err(|e| usage(anyhow::anyhow!("--service {name}: {e}")))?;
        config.services.insert(name, service);
    }
    let roots = scratch.path().join("roots");
    if let Some(dir) = &args.files {
        copy_roots(dir, &roots, scratch.path(), &mut config.roots).map_err(usage)?;
    }
    let settings: BTreeMap<String, String> =
        args.settings.iter().map(|raw| pair(raw, "--setting NAME=VALUE")).collect::<Result<_, _>>()?;

    let checking = crate::runtime::Runtime::new(config.clone(), &capstan_builtins::BUILT_INS).map_err(failed)?;
    let loaded = checking
        .check(&bytes, args.file.clone())
        .await
        .map_err(|reason| failed(anyhow::anyhow!("{} refused: {reason}", args.file.display())))?;
    drop(checking);
    let id = loaded.descriptor.id.clone();
    let mut own = user.capabilities.get(&id).cloned().unwrap_or_default();
    own.settings = settings;
    config.capabilities.insert(id.clone(), own);
    std::fs::create_dir_all(config.capabilities_dir()).map_err(failed)?;
    std::fs::write(config.capabilities_dir().join("component.wasm"), &bytes).map_err(failed)?;
    let app = crate::app::App::open(config).await.map_err(failed)?;
    let runtime = app.caps().runtime().clone();
    if runtime.snapshot().held.contains_key(&id) {
        // A throwaway host: nobody else is there to accept it.
        runtime.accept(&id).await.map_err(failed)?;
        runtime.rescan(false).await.map_err(failed)?;
    }
    if let Some(refusal) = runtime.snapshot().refused.first() {
        return Err(failed(anyhow::anyhow!("{} refused: {}", args.file.display(), refusal.reason)));
    }
    let before = tree(&roots);
    let grant = Grant::new(Actor::Cli, loaded.descriptor.label).recorded();
    // The pipeline refuses such input before the component runs, in these
    // words, and gives up checking it when the call's deadline passes.
    let within = std::time::Duration::from_millis(runtime.config().limits_for(&id).deadline_ms);
    let checked = check_input(&loaded.input_validator, &id, &input, within, &StopSignal::default()).await;
    let report = if let Some((kind, message)) = checked.refusal() {
        Report {
            capability: id,
            label: loaded.descriptor.label.to_string(),
            status: Status::Failed,
            outcome: CallOutcome::Failed { failure: crate::runtime::Failure { kind: kind.into(), message } },
            host_calls: Vec::new(),
            host_calls_not_recorded: 0,
            files: FileChanges::default(),
            elapsed_ms: 0.0,
        }
    } else {
        let call = runtime.call(&id, &input.to_string(), grant).await.map_err(failed)?;
        Report {
            capability: id,
            label: loaded.descriptor.label.to_string(),
            status: call.status(),
            files: changes(&before, &tree(&roots)),
            elapsed_ms: call.elapsed_us as f64 / 1000.0,
            host_calls: call.host_calls,
            host_calls_not_recorded: call.host_calls_dropped,
            outcome: call.outcome,
        }
    };
    println!("{}", serde_json::to_string_pretty(&report).map_err(failed)?);
    Ok(match report.status {
        Status::Succeeded | Status::Pending => 0,
        Status::Failed => exit::FAILED,
        Status::Unknown => exit::UNKNOWN,
    })
}

/// Copies each subfolder of `dir` into `roots/<name>` and names it a root.
/// `scratch` (where the copies go) is never copied into itself.
fn copy_roots(dir: &Path, roots: &Path, scratch: &Path, names: &mut BTreeMap<String, PathBuf>) -> anyhow::Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| anyhow::anyhow!("--files {}: {e}", dir.display()))?;
    let scratch = scratch.canonicalize()?;
    for entry in entries {
        let entry = entry?;
        if !entry.file_type()?.is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let copy = roots.join(&name);
        copy_tree(&entry.path(), &copy, &scratch)?;
        names.insert(name, copy);
    }
    anyhow::ensure!(!names.is_empty(), "--files {} has no subfolder to serve as a root", dir.display());
    Ok(())
}

/// Copies the folders and regular files under `from`. Links and special
/// files are left out (the host never follows them, so a component could
/// not use them either), also when one replaces a file while it is copied:
/// a file is opened without following a link and without blocking on a
/// FIFO, and copied only if what was opened is a regular file.
fn copy_tree(from: &Path, to: &Path, scratch: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if from.canonicalize().is_ok_and(|dir| dir.starts_with(scratch)) {
        return Ok(());
    }
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target, scratch)?;
        } else if kind.is_file() {
            let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
            let Ok(mut source) =
                std::fs::OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(entry.path())
            else {
                continue;
            };
            if !source.metadata()?.is_file() {
                continue;
            }
            std::io::copy(&mut source, &mut std::fs::File::create(&target)?)?;
        }
    }
    Ok(())
}

/// Every file under `roots` as `root:path` → (length, contents' digest).
fn tree(roots: &Path) -> BTreeMap<String, (u64, String)> {
    use sha2::Digest;
    let mut files = BTreeMap::new();
    let mut stack = vec![roots.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                stack.push(path);
            } else if let Ok(rel) = path.strip_prefix(roots) {
                let mut parts = rel.components();
                let root = parts.next().map(|c| c.as_os_str().to_string_lossy().into_owned()).unwrap_or_default();
                let inner = parts.as_path().to_string_lossy().into_owned();
                // Hashed as it is read: a fixture may be a large video file.
                let mut hasher = sha2::Sha256::new();
                let len = std::fs::File::open(&path).and_then(|mut f| std::io::copy(&mut f, &mut hasher)).unwrap_or(0);
                files.insert(format!("{root}:{inner}"), (len, hex::encode(hasher.finalize())));
            }
        }
    }
    files
}

fn changes(before: &BTreeMap<String, (u64, String)>, after: &BTreeMap<String, (u64, String)>) -> FileChanges {
    let mut out = FileChanges::default();
    for (path, seen) in after {
        match before.get(path) {
            None => out.created.push(path.clone()),
            Some(was) if was != seen => out.changed.push(path.clone()),
            Some(_) => {}
        }
    }
    out.removed = before.keys().filter(|p| !after.contains_key(*p)).cloned().collect();
    out
}
