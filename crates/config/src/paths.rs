//! Every path the configuration names, made absolute once at start against
//! the working directory (flags, environment and the config file alike), and
//! the check that file roots stay apart from the host's own folders. Later
//! code never sees a relative path, so nothing depends on the directory a
//! library or a subprocess happens to run in.

use std::path::{Path, PathBuf};

use super::{Config, ConfigError, SecretRef};

fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() { path.to_path_buf() } else { cwd.join(path) }
}

/// `sqlite://FILE?...` and `sqlite:FILE?...` with a relative FILE become
/// absolute; in-memory databases and other backends are left as they are.
fn absolute_sqlite_url(cwd: &Path, url: &str) -> String {
    let Some(rest) = url.strip_prefix("sqlite:") else {
        return url.to_string();
    };
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let (file, query) = match rest.split_once('?') {
        Some((file, query)) => (file, Some(query)),
        None => (rest, None),
    };
    if file.is_empty() || file == ":memory:" || file.starts_with('/') {
        return url.to_string();
    }
    let file = cwd.join(file);
    match query {
        Some(query) => format!("sqlite://{}?{query}", file.display()),
        None => format!("sqlite://{}", file.display()),
    }
}

fn absolute_secret(cwd: &Path, secret: &mut SecretRef) {
    if let Some(path) = secret.0.strip_prefix("file:")
        && !Path::new(path).is_absolute()
    {
        secret.0 = format!("file:{}", cwd.join(path).display());
    }
}

/// The path with symlinks resolved as far as it exists, so two spellings of
/// one folder compare equal; the part that does not exist yet is kept.
fn real(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut at = path.to_path_buf();
    loop {
        if let Ok(found) = std::fs::canonicalize(&at) {
            return missing.iter().rev().fold(found, |p: PathBuf, seg| p.join(seg));
        }
        match (at.file_name().map(|s| s.to_os_string()), at.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                at = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

fn overlaps(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

impl Config {
    /// Makes every configured path absolute against `cwd`: the data,
    /// capabilities, skills and cache folders, a SQLite database file, file roots
    /// and `file:` secrets. Idempotent.
    pub fn resolve_paths(&mut self, cwd: &Path) {
        let data = absolute(cwd, &self.data_dir());
        self.data_dir = Some(data);
        self.capabilities_dir = self.capabilities_dir.as_deref().map(|p| absolute(cwd, p));
        self.skills_dir = self.skills_dir.as_deref().map(|p| absolute(cwd, p));
        self.cache_dir = self.cache_dir.as_deref().map(|p| absolute(cwd, p));
        self.database_url = self.database_url.as_deref().map(|u| absolute_sqlite_url(cwd, u));
        for dir in self.roots.values_mut() {
            *dir = absolute(cwd, dir);
        }
        for service in self.services.values_mut() {
            match &mut service.auth {
                super::Auth::Header { value, .. }
                | super::Auth::Query { value, .. }
                | super::Auth::Path { value, .. } => absolute_secret(cwd, value),
                super::Auth::Basic { password, .. } | super::Auth::FormLogin { password, .. } => {
                    absolute_secret(cwd, password)
                }
                super::Auth::None => {}
            }
        }
    }

    /// Refuses a file root that contains, or lies inside, the data folder
    /// or the capabilities folder: a component with file access would
    /// otherwise reach the database, the key file or the plugins themselves.
    pub fn check_root_overlaps(&self) -> Result<(), ConfigError> {
        let own = [("data_dir", real(&self.data_dir())), ("capabilities_dir", real(&self.capabilities_dir()))];
        for (name, dir) in &self.roots {
            let root = real(dir);
            for (what, folder) in &own {
                if overlaps(&root, folder) {
                    return Err(ConfigError::Invalid(format!(
                        "root {name} ({}) overlaps the {what} ({}); file roots must be separate folders",
                        root.display(),
                        folder.display()
                    )));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::absolute_sqlite_url;
    use crate::Config;

    #[test]
    fn relative_paths_become_absolute_once() {
        let mut c =
            Config::parse("data_dir = \"data\"\ncache_dir = \"../cache\"\n[roots]\nmedia = \"media\"\n").unwrap();
        c.resolve_paths(Path::new("/srv/capstan"));
        assert_eq!(c.data_dir(), Path::new("/srv/capstan/data"));
        assert_eq!(c.capabilities_dir(), Path::new("/srv/capstan/data/capabilities"));
        assert_eq!(c.cache_dir(), Path::new("/srv/capstan/../cache"));
        assert_eq!(c.roots["media"], Path::new("/srv/capstan/media"));
        assert!(c.database_url().starts_with("sqlite:///srv/capstan/data/capstan.db"), "{}", c.database_url());
        let again = c.clone();
        c.resolve_paths(Path::new("/elsewhere"));
        assert_eq!(c.data_dir(), again.data_dir());
    }

    #[test]
    fn sqlite_urls_keep_their_options() {
        let cwd = Path::new("/w");
        assert_eq!(absolute_sqlite_url(cwd, "sqlite://db/c.db?mode=rwc"), "sqlite:///w/db/c.db?mode=rwc");
        assert_eq!(absolute_sqlite_url(cwd, "sqlite:c.db"), "sqlite:///w/c.db");
        assert_eq!(absolute_sqlite_url(cwd, "sqlite:///abs/c.db"), "sqlite:///abs/c.db");
        assert_eq!(absolute_sqlite_url(cwd, "sqlite::memory:"), "sqlite::memory:");
        assert_eq!(absolute_sqlite_url(cwd, "postgres://u@h/db"), "postgres://u@h/db");
    }

    #[test]
    fn roots_may_not_overlap_the_hosts_folders() {
        let mut c = Config::parse("data_dir = \"/srv/c/data\"\n[roots]\nall = \"/srv/c\"\n").unwrap();
        c.resolve_paths(Path::new("/"));
        let err = c.check_root_overlaps().unwrap_err().to_string();
        assert!(err.contains("root all") && err.contains("data_dir"), "{err}");
        let inside =
            Config::parse("data_dir = \"/srv/c/data\"\n[roots]\nx = \"/srv/c/data/capabilities/x\"\n").unwrap();
        assert!(inside.check_root_overlaps().is_err());
        let apart = Config::parse("data_dir = \"/srv/c/data\"\n[roots]\nm = \"/srv/c/media\"\n").unwrap();
        assert!(apart.check_root_overlaps().is_ok());
    }
}
