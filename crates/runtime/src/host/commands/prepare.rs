//! What a caller asks, checked against the command's configuration before
//! anything runs: the command must be configured; each appended argument
//! must match what the operator allows at its position (or the command be
//! `free`); only allowed environment names may be set; the working folder
//! must be a directory below the configured one, symlinks resolved inside
//! it, and is opened here so the process starts in what was checked; the
//! timeout is the default when not given and never past the maximum.
//! Refusals name positions and names, never the values a caller sent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use std::time::Duration;

use super::process::ProcessSpec;
use crate::bindings::capstan::host::types::{CommandRequest, HostError};
use capstan_config::{CommandConfig, MAX_FREE_ARGS};

/// The spawn of `request` for `command`, or why not. `roots` are the file
/// roots in effect; `work_dir` is where a command without a folder runs.
pub(super) fn prepare(
    command: &CommandConfig,
    request: &CommandRequest,
    roots: &BTreeMap<String, PathBuf>,
    work_dir: &Path,
) -> Result<ProcessSpec, HostError> {
    let name = &request.name;
    let invalid = |why: String| HostError::Invalid(format!("command {name}: {why}"));
    if command.free {
        if request.args.len() > MAX_FREE_ARGS {
            return Err(invalid(format!("at most {MAX_FREE_ARGS} arguments may be appended")));
        }
    } else {
        let patterns = command.append_patterns();
        if request.args.len() > patterns.len() {
            return Err(invalid(format!(
                "{} argument(s) may be appended, {} were given",
                patterns.len(),
                request.args.len()
            )));
        }
        if let Some(i) = request.args.iter().zip(&patterns).position(|(arg, re)| !re.is_match(arg)) {
            return Err(invalid(format!("argument {} is not one the operator allows at that position", i + 1)));
        }
    }
    if let Some(i) = request.args.iter().position(|a| a.contains('\0')) {
        return Err(invalid(format!("argument {} contains a NUL byte", i + 1)));
    }
    let mut env = Vec::new();
    for pair in &request.env {
        if !command.env.contains(&pair.name) {
            return Err(invalid(format!("{:?} is not an environment variable callers may set", pair.name)));
        }
        if pair.value.contains('\0') {
            return Err(invalid(format!("the value of {} contains a NUL byte", pair.name)));
        }
        env.push((pair.name.clone(), pair.value.clone()));
    }
    // Each folder is opened below the one before it, symlinks resolved
    // inside it: the process starts in the folder opened here, so a link
    // swapped in after this check leads nowhere.
    let cwd = match &command.cwd {
        Some(cwd) => {
            let root = roots.get(&cwd.root).ok_or_else(|| {
                HostError::Unavailable(format!("command {name}: its file root {} is not set up", cwd.root))
            })?;
            let root = open_root(root).map_err(|e| HostError::Unavailable(format!("command {name}: {e}")))?;
            let base = below(&root, &cwd.path)
                .map_err(|e| HostError::Unavailable(format!("command {name}: its working folder {}: {e}", cwd.path)))?;
            below(&base, &request.cwd).map_err(|e| invalid(format!("cwd {e}")))?
        }
        None => {
            std::fs::create_dir_all(work_dir.join(name))
                .map_err(|e| HostError::Unavailable(format!("command {name}: cannot make its working folder: {e}")))?;
            let base =
                open_root(&work_dir.join(name)).map_err(|e| HostError::Unavailable(format!("command {name}: {e}")))?;
            below(&base, &request.cwd).map_err(|e| invalid(format!("cwd {e}")))?
        }
    };
    let max = Duration::from_secs(command.max_timeout_sec);
    let timeout = match request.timeout_sec {
        0 => Duration::from_secs(command.timeout_sec),
        secs => Duration::from_secs(u64::from(secs)).min(max),
    };
    let mut args = command.args.clone();
    args.extend(request.args.iter().cloned());
    Ok(ProcessSpec {
        program: command.program.clone(),
        args,
        env,
        cwd,
        timeout,
        grace: Duration::from_secs(command.kill_grace_sec),
    })
}

fn open_root(path: &Path) -> Result<Dir, String> {
    Dir::open_ambient_dir(path, ambient_authority()).map_err(|e| format!("cannot open {}: {e}", path.display()))
}

/// The folder `sub` below `base`, opened: it must exist, be a folder and
/// stay below `base` once symlinks are followed.
fn below(base: &Dir, sub: &str) -> Result<Dir, String> {
    let rel = capstan_config::relative_folder(sub)?;
    if rel.as_os_str().is_empty() {
        return base.try_clone().map_err(|e| e.to_string());
    }
    base.open_dir(rel).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => "leads out of its working folder".to_string(),
        _ => "is not an existing folder below its working folder".to_string(),
    })
}
