//! `[commands.<name>]`: the programs the operator lets capabilities run,
//! and within what bounds. A command is a program (an absolute path to an
//! executable file, checked when the configuration is read) with fixed
//! leading arguments; what a caller may append (one regular expression
//! per position, or anything with `free = true`); the environment names a
//! caller may set (everything else is cleared, PATH fixed); a working
//! folder under a named file root; a default and a largest timeout; how
//! much output is previewed and archived; and how long a stopped process
//! is given between SIGTERM and SIGKILL. No shell is involved unless the
//! operator names one as the program.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

/// The PATH every command gets, whatever the host's own is.
pub const COMMAND_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// One `[commands.<name>]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandConfig {
    /// The program: an absolute path to an executable file.
    pub program: PathBuf,
    /// Arguments always passed first.
    #[serde(default)]
    pub args: Vec<String>,
    /// What a caller may append: the n-th appended argument must match the
    /// n-th expression whole; no more arguments than expressions.
    #[serde(default)]
    pub append: Vec<String>,
    /// Any arguments may be appended (at most 64). Off by default.
    #[serde(default)]
    pub free: bool,
    /// Environment variables a caller may set, by name.
    #[serde(default)]
    pub env: Vec<String>,
    /// The working folder: a named file root and a folder below it (the
    /// root itself when `path` is left out). Without it, the data folder's
    /// `command-work/<name>`.
    pub cwd: Option<CommandCwd>,
    /// Seconds a run may take when the caller names no timeout.
    #[serde(default = "default_timeout")]
    pub timeout_sec: u64,
    /// The longest timeout a caller may ask for.
    #[serde(default = "default_max_timeout")]
    pub max_timeout_sec: u64,
    /// Bytes of output shown in a result: half from its start, half from
    /// its end.
    #[serde(default = "default_output_limit")]
    pub output_limit_bytes: u64,
    /// Bytes of output archived; past it, output is read and dropped.
    #[serde(default = "default_archive_limit")]
    pub archive_limit_bytes: u64,
    /// Seconds between SIGTERM and SIGKILL when a process is stopped.
    #[serde(default = "default_kill_grace")]
    pub kill_grace_sec: u64,
}

/// Where a command runs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandCwd {
    pub root: String,
    #[serde(default)]
    pub path: String,
}

fn default_timeout() -> u64 {
    60
}

fn default_max_timeout() -> u64 {
    600
}

fn default_output_limit() -> u64 {
    16 << 10
}

fn default_archive_limit() -> u64 {
    256 << 20
}

fn default_kill_grace() -> u64 {
    5
}

/// The most arguments a caller may append to a `free` command.
pub const MAX_FREE_ARGS: usize = 64;

impl CommandConfig {
    /// Checks the table `commands.<name>` against `roots`, naming the key
    /// that is wrong.
    pub fn validate(&self, name: &str, roots: &BTreeMap<String, PathBuf>) -> Result<(), String> {
        let key = |field: &str| format!("commands.{name}.{field}");
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(format!("command name {name:?} must be letters, digits, - or _"));
        }
        check_program(&self.program).map_err(|e| format!("{}: {e}", key("program")))?;
        if let Some(bad) = self.args.iter().find(|a| a.contains('\0')) {
            return Err(format!("{}: {bad:?} contains a NUL byte", key("args")));
        }
        for (i, pattern) in self.append.iter().enumerate() {
            anchored(pattern).map_err(|e| format!("{}[{i}]: {e}", key("append")))?;
        }
        if self.free && !self.append.is_empty() {
            return Err(format!("{}: set either free = true or append, not both", key("free")));
        }
        for var in &self.env {
            let valid = var.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid || var == "PATH" {
                return Err(format!("{}: {var:?} is not a name a caller may set (PATH is fixed)", key("env")));
            }
        }
        if let Some(cwd) = &self.cwd {
            if !roots.contains_key(&cwd.root) {
                return Err(format!("{}: no file root named {:?} in [roots]", key("cwd.root"), cwd.root));
            }
            relative_folder(&cwd.path).map_err(|e| format!("{}: {e}", key("cwd.path")))?;
        }
        if !(1..=86_400).contains(&self.max_timeout_sec) {
            return Err(format!("{} must be between 1 and 86400", key("max_timeout_sec")));
        }
        if self.timeout_sec == 0 || self.timeout_sec > self.max_timeout_sec {
            return Err(format!("{} must be between 1 and max_timeout_sec", key("timeout_sec")));
        }
        if !(256..=(1 << 20)).contains(&self.output_limit_bytes) {
            return Err(format!("{} must be between 256 and 1048576", key("output_limit_bytes")));
        }
        if self.archive_limit_bytes < self.output_limit_bytes || self.archive_limit_bytes > (16 << 30) {
            return Err(format!("{} must be between output_limit_bytes and 16 GiB", key("archive_limit_bytes")));
        }
        if !(1..=300).contains(&self.kill_grace_sec) {
            return Err(format!("{} must be between 1 and 300", key("kill_grace_sec")));
        }
        Ok(())
    }

    /// The expressions appended arguments must match, compiled.
    pub fn append_patterns(&self) -> Vec<regex::Regex> {
        // Checked when the configuration was read.
        self.append.iter().filter_map(|p| anchored(p).ok()).collect()
    }
}

/// `pattern` compiled to match a whole argument.
fn anchored(pattern: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(&format!("^(?:{pattern})$")).map_err(|e| format!("not a regular expression: {e}"))
}

/// A folder below a root: relative, no `..`, no NUL.
pub fn relative_folder(path: &str) -> Result<&Path, String> {
    let p = Path::new(path);
    if path.contains('\0') {
        return Err("contains a NUL byte".into());
    }
    if p.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(format!("{path:?} must be a folder below the root (relative, without ..)"));
    }
    Ok(p)
}

fn check_program(program: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    if !program.is_absolute() {
        return Err(format!("{} must be an absolute path", program.display()));
    }
    let meta = std::fs::metadata(program).map_err(|e| format!("{}: {e}", program.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a file", program.display()));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(format!("{} is not executable", program.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::Config;

    fn refused(toml: &str) -> String {
        Config::parse(toml).unwrap_err().to_string()
    }

    #[test]
    fn a_command_is_checked_when_the_configuration_is_read() {
        let ok = Config::parse(
            "[roots]\nmedia = \"/tmp\"\n[commands.df]\nprogram = \"/bin/sh\"\nargs = [\"-c\", \"df -h\"]\n\
             [commands.probe]\nprogram = \"/bin/sh\"\nappend = ['[\\w./-]+']\nenv = [\"LANG\"]\n\
             cwd = { root = \"media\", path = \"movies\" }\ntimeout_sec = 5\n",
        )
        .unwrap();
        assert_eq!((ok.commands["df"].timeout_sec, ok.commands["probe"].timeout_sec), (60, 5));
        assert!(ok.commands["probe"].append_patterns()[0].is_match("a/b.mkv"));
        assert!(!ok.commands["probe"].append_patterns()[0].is_match("a b"), "whole arguments only");
        for (toml, says) in [
            ("[commands.x]\nprogram = \"sh\"\n", "commands.x.program: sh must be an absolute path"),
            ("[commands.x]\nprogram = \"/no/such/program\"\n", "commands.x.program: /no/such/program"),
            ("[commands.x]\nprogram = \"/bin\"\n", "is not a file"),
            ("[commands.x]\nprogram = \"/bin/sh\"\nappend = [\"(\"]\n", "commands.x.append[0]"),
            ("[commands.x]\nprogram = \"/bin/sh\"\nenv = [\"PATH\"]\n", "commands.x.env"),
            ("[commands.x]\nprogram = \"/bin/sh\"\ncwd = { root = \"nope\" }\n", "commands.x.cwd.root"),
            (
                "[roots]\nm = \"/tmp\"\n[commands.x]\nprogram = \"/bin/sh\"\ncwd = { root = \"m\", path = \"../up\" }\n",
                "commands.x.cwd.path",
            ),
            ("[commands.x]\nprogram = \"/bin/sh\"\ntimeout_sec = 700\n", "commands.x.timeout_sec"),
            ("[commands.x]\nprogram = \"/bin/sh\"\nkill_grace_sec = 0\n", "commands.x.kill_grace_sec"),
            ("[commands.x]\nprogram = \"/bin/sh\"\nfree = true\nappend = [\"a\"]\n", "commands.x.free"),
            ("[commands.x]\nprogram = \"/bin/sh\"\nshell = true\n", "unknown field"),
            ("[commands.\"a b\"]\nprogram = \"/bin/sh\"\n", "must be letters"),
        ] {
            let err = refused(toml);
            assert!(err.contains(says), "{toml}: {err}");
        }
        let plain = tempfile::NamedTempFile::new().unwrap();
        let err = refused(&format!("[commands.x]\nprogram = {:?}\n", plain.path()));
        assert!(err.contains("is not executable"), "{err}");
    }
}
