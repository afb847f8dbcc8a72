//! What an operator sets up in the console rather than in `capstan.toml`:
//! TMDB, up to three Torznab indexers and qBittorrent ([`kinds`]), the
//! `downloads` and `library` roots, and the library's naming and download
//! placement. Kept in the database (`setup_entry`), each secret encrypted
//! like the other secrets. What the file sets wins and is shown as set by
//! the file; the rest comes from here. [`apply`] merges both and puts the
//! result in place in the runtime without a restart (every process does
//! so again when another one changed it: the app's `follow_setup` loop). [`probe`] is the
//! console's Test button: a real request with the form's values or the
//! saved ones, what it used, and what it found. [`mcp`] keeps the external
//! MCP servers set up in the console. [`document`]
//! writes a settings change that also names TMDB's connection, both in one
//! transaction. Where nothing configures TMDB, the environment may
//! (`Config::tmdb_environment`).

pub mod document;
pub mod feed;
pub mod kinds;
pub mod mcp;
pub mod probe;
pub mod told;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::Row;

pub use kinds::{ServiceEntry, ServiceKind};

use crate::config::{Config, ServiceConfig, TmdbEnvironment};
use crate::runtime::Runtime;
use crate::settings::Settings;
use crate::store::{Db, now_ms};

/// Why a change to the setup was refused.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("secrets cannot be read or written: {0}")]
    Secret(String),
    #[error(transparent)]
    Sql(#[from] sqlx::Error),
}

/// The longest naming template, in characters.
pub(crate) const MAX_TEMPLATE_CHARS: usize = 500;

/// How files may reach the library.
pub(crate) const MODES: [&str; 3] = ["hardlink", "copy", "move"];

/// The library's naming and where downloads go, as the console sets them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LibraryEntry {
    #[serde(default)]
    #[schema(schema_with = movie_template_schema)]
    pub movie_template: Option<String>,
    #[serde(default)]
    #[schema(schema_with = episode_template_schema)]
    pub episode_template: Option<String>,
    #[serde(default)]
    #[schema(schema_with = mode_schema)]
    pub mode: Option<String>,
    /// qBittorrent's save path for new downloads.
    #[serde(default)]
    pub save_path: Option<String>,
    /// qBittorrent's category for new downloads.
    #[serde(default)]
    pub category: Option<String>,
}

/// A naming template (or null): 1 to [`MAX_TEMPLATE_CHARS`] characters,
/// not all white space, as `put_library` checks it.
fn template_schema(description: &str) -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .pattern(Some(crate::text::not_blank_pattern()))
        .max_length(Some(MAX_TEMPLATE_CHARS))
        .description(Some(description))
        .build()
}

fn movie_template_schema() -> utoipa::openapi::Object {
    template_schema("organize.plan's `movie_template`, e.g. `{Movie Title} ({Release Year})/{Movie Title}`.")
}

fn episode_template_schema() -> utoipa::openapi::Object {
    template_schema("organize.plan's `episode_template`.")
}

fn mode_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    let choices = MODES.iter().map(|m| Value::from(*m)).chain([Value::Null]);
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .enum_values(Some(choices))
        .description(Some("How files reach the library: `hardlink` (default), `copy` or `move`."))
        .build()
}

/// Where each library setting goes: (field, capability, setting name).
const LIBRARY_SETTINGS: &[(&str, &str, &str)] = &[
    ("movieTemplate", "organize.plan", "movie_template"),
    ("episodeTemplate", "organize.plan", "episode_template"),
    ("mode", "organize.plan", "mode"),
    ("savePath", "download.submit", "save_path"),
    ("category", "download.submit", "category"),
];

/// The setup store over one database.
#[derive(Clone)]
pub struct SetupStore {
    db: Db,
    settings: Arc<Settings>,
}

fn secret_name(name: &str) -> String {
    format!("setup.service.{name}")
}

impl SetupStore {
    pub fn new(db: Db, settings: Arc<Settings>) -> SetupStore {
        SetupStore { db, settings }
    }

    async fn row(&self, section: &str, name: &str) -> Result<Option<(Value, Option<String>)>, SetupError> {
        let row = sqlx::query("SELECT body, secret FROM setup_entry WHERE section = $1 AND name = $2")
            .bind(section)
            .bind(name)
            .fetch_optional(&self.db.pool)
            .await?;
        let Some(row) = row else { return Ok(None) };
        let body: String = row.try_get("body")?;
        let body =
            serde_json::from_str(&body).map_err(|e| SetupError::Invalid(format!("stored {section} {name}: {e}")))?;
        Ok(Some((body, row.try_get("secret")?)))
    }

    async fn rows(&self, section: &str) -> Result<Vec<(String, Value, Option<String>)>, SetupError> {
        let rows = sqlx::query("SELECT name, body, secret FROM setup_entry WHERE section = $1 ORDER BY name")
            .bind(section)
            .fetch_all(&self.db.pool)
            .await?;
        let mut out = Vec::new();
        for row in rows {
            let body: String = row.try_get("body")?;
            let body = serde_json::from_str(&body).unwrap_or(Value::Null);
            out.push((row.try_get("name")?, body, row.try_get("secret")?));
        }
        Ok(out)
    }

    async fn upsert(
        &self,
        section: &str,
        name: &str,
        body: &Value,
        secret: Option<&str>,
        by: &str,
    ) -> Result<(), SetupError> {
        let mut tx = self.db.begin_write().await?;
        upsert_in(&mut tx, section, name, body, secret, by).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Sets up service `name` (a console kind). Without `secret` the stored
    /// one is kept. A name `capstan.toml` configures is the file's.
    pub async fn put_service(
        &self,
        config: &Config,
        name: &str,
        entry: &ServiceEntry,
        secret: Option<&str>,
        by: &str,
    ) -> Result<(), SetupError> {
        let kind = kinds::kind_of(name)
            .ok_or_else(|| SetupError::NotFound(format!("no service {name} can be set up here")))?;
        if config.services.contains_key(name) {
            return Err(SetupError::Conflict(format!("service {name} is set in capstan.toml; change it there")));
        }
        kinds::check_entry(kind, entry).map_err(SetupError::Invalid)?;
        let typed = secret.filter(|s| !s.trim().is_empty());
        let (entry, typed) = match typed {
            Some(typed) => {
                kinds::literal_secret(typed).map_err(SetupError::Invalid)?;
                let (entry, stored) = kinds::with_typed_secret(kind, entry, typed).map_err(SetupError::Invalid)?;
                (entry, Some(stored))
            }
            None => (entry.clone(), None),
        };
        let stored = self.service_secret(kind, name, typed.as_deref(), &config.tmdb_environment).await?;
        let plain = match &stored {
            Some(stored) => self.decrypt(name, stored)?,
            None => String::new(),
        };
        let service = kinds::service_config(kind, &entry, &plain).map_err(SetupError::Invalid)?;
        service.validate(name).map_err(SetupError::Invalid)?;
        self.upsert("service", name, &json!(entry), stored.as_deref(), by).await
    }

    /// The stored (encrypted) secret service `name` will have: `secret`
    /// when given, else the one stored. Only TMDB may have none, and only
    /// while the environment holds its credential.
    async fn service_secret(
        &self,
        kind: ServiceKind,
        name: &str,
        secret: Option<&str>,
        env: &TmdbEnvironment,
    ) -> Result<Option<String>, SetupError> {
        if let Some(s) = secret.filter(|s| !s.trim().is_empty()) {
            kinds::literal_secret(s).map_err(SetupError::Invalid)?;
            let key = self.settings.master_key().map_err(|e| SetupError::Secret(e.to_string()))?;
            return Ok(Some(key.encrypt(&secret_name(name), s.trim())));
        }
        match self.row("service", name).await?.and_then(|(_, s)| s) {
            Some(stored) => Ok(Some(stored)),
            None if kind == ServiceKind::Tmdb && env.credential.is_some() => Ok(None),
            None if kinds::secret_optional(kind) => Ok(None),
            None if kind == ServiceKind::Tmdb => Err(SetupError::Invalid(format!(
                "{name} needs its key or read token (or Capstan started with {} or {})",
                crate::config::TMDB_API_KEY_ENV,
                crate::config::TMDB_ACCESS_TOKEN_ENV
            ))),
            None => Err(SetupError::Invalid(format!("{name} needs its {}", probe::secret_word(kind)))),
        }
    }

    fn decrypt(&self, name: &str, stored: &str) -> Result<String, SetupError> {
        let key = self.settings.master_key().map_err(|e| SetupError::Secret(e.to_string()))?;
        key.decrypt(&secret_name(name), stored).map_err(|e| SetupError::Secret(e.to_string()))
    }

    /// Sets root `name` (`downloads` or `library`) to an existing folder.
    pub async fn put_root(&self, config: &Config, name: &str, path: &str, by: &str) -> Result<(), SetupError> {
        let dir = checked_root(config, name, path)?;
        self.upsert("root", name, &json!({ "path": dir }), None, by).await
    }

    /// Sets the library's naming and download placement.
    pub async fn put_library(&self, entry: &LibraryEntry, by: &str) -> Result<(), SetupError> {
        if let Some(mode) = &entry.mode
            && !MODES.contains(&mode.as_str())
        {
            return Err(SetupError::Invalid(format!("mode {mode:?} is not hardlink, copy or move")));
        }
        for (what, template) in [("movieTemplate", &entry.movie_template), ("episodeTemplate", &entry.episode_template)]
        {
            if template.as_ref().is_some_and(|t| t.trim().is_empty() || t.chars().count() > MAX_TEMPLATE_CHARS) {
                return Err(SetupError::Invalid(format!("{what} must be 1 to {MAX_TEMPLATE_CHARS} characters")));
            }
        }
        self.upsert("library", "library", &json!(entry), None, by).await
    }

    /// Forgets what the console set for service or root `name`.
    pub async fn remove(&self, section: &str, name: &str) -> Result<(), SetupError> {
        let n = sqlx::query("DELETE FROM setup_entry WHERE section = $1 AND name = $2")
            .bind(section)
            .bind(name)
            .execute(&self.db.pool)
            .await?
            .rows_affected();
        if n == 0 {
            return Err(SetupError::NotFound(format!("no {section} {name} is set up in the console")));
        }
        Ok(())
    }

    /// When the setup last changed, to notice another process's change.
    pub async fn version(&self) -> Result<(i64, i64), SetupError> {
        let row =
            sqlx::query("SELECT COUNT(*) AS n, CAST(COALESCE(MAX(updated_at), 0) AS BIGINT) AS at FROM setup_entry")
                .fetch_one(&self.db.pool)
                .await?;
        Ok((row.try_get("n")?, row.try_get("at")?))
    }

    /// The console's services with their secrets, decrypted; TMDB with
    /// the environment's credential where it has none of its own.
    async fn console_services(&self, env: &TmdbEnvironment) -> Result<BTreeMap<String, ServiceConfig>, SetupError> {
        let mut out = BTreeMap::new();
        for (name, body, secret) in self.rows("service").await? {
            let (Some(kind), Ok(entry)) = (kinds::kind_of(&name), serde_json::from_value::<ServiceEntry>(body)) else {
                continue;
            };
            let plain = secret.map(|s| self.decrypt(&name, &s)).transpose()?;
            let service = match (kind, plain) {
                (ServiceKind::Tmdb, plain) => kinds::tmdb_service(Some((&entry, plain.as_deref())), env),
                (kind, Some(plain)) => Some(kinds::service_config(kind, &entry, &plain)),
                (kind, None) if kinds::secret_optional(kind) => Some(kinds::service_config(kind, &entry, "")),
                (_, None) => None,
            };
            if let Some(Ok(service)) = service {
                out.insert(name, service);
            }
        }
        Ok(out)
    }

    /// What is in effect: the file's services, roots and settings, and the
    /// console's where the file says nothing.
    pub async fn effective(&self, config: &Config) -> Result<Effective, SetupError> {
        let mut services = config.services.clone();
        let env = &config.tmdb_environment;
        for (name, service) in self.console_services(env).await? {
            services.entry(name).or_insert(service);
        }
        if !services.contains_key("tmdb")
            && let Some(Ok(service)) = kinds::tmdb_service(None, env)
        {
            match service.validate("tmdb") {
                Ok(()) => {
                    services.insert("tmdb".into(), service);
                }
                Err(e) => {
                    let variable = crate::config::TMDB_BASE_URL_ENV;
                    tracing::error!(error = %e, "{variable} is not a usable base URL; TMDB is not set up")
                }
            }
        }
        let mut roots = config.roots.clone();
        for (name, body, _) in self.rows("root").await? {
            if let Some(path) = body["path"].as_str() {
                roots.entry(name).or_insert_with(|| PathBuf::from(path));
            }
        }
        let mut settings: BTreeMap<String, BTreeMap<String, String>> =
            config.capabilities.iter().map(|(id, c)| (id.clone(), c.settings.clone())).collect();
        if let Some((body, _)) = self.row("library", "library").await? {
            for (field, capability, setting) in LIBRARY_SETTINGS {
                if let Some(value) = body[*field].as_str().filter(|v| !v.trim().is_empty()) {
                    settings
                        .entry(capability.to_string())
                        .or_default()
                        .entry(setting.to_string())
                        .or_insert(value.into());
                }
            }
        }
        // A notification target's own setting, where the file names none.
        for (name, body, _) in self.rows("service").await? {
            let (Some(kind), Ok(entry)) = (kinds::kind_of(&name), serde_json::from_value::<ServiceEntry>(body)) else {
                continue;
            };
            if config.services.contains_key(&name) {
                continue;
            }
            for (capability, setting, value) in kinds::settings_of(kind, &entry) {
                settings.entry(capability.to_string()).or_default().entry(setting.to_string()).or_insert(value);
            }
        }
        // qBittorrent saves where Capstan looks for finished downloads unless
        // told otherwise (a client in a container sees the folder under
        // another path, and is given it as the save path).
        if let Some(downloads) = roots.get("downloads") {
            let submit = settings.entry("download.submit".to_string()).or_default();
            submit.entry("save_path".to_string()).or_insert_with(|| downloads.display().to_string());
        }
        Ok(Effective { services, roots, settings })
    }

    /// What the console shows: every service and root it can set up, with
    /// where its value comes from and whether its secret is set; secrets
    /// themselves never.
    pub async fn view(&self, config: &Config) -> Result<Value, SetupError> {
        let stored: BTreeMap<String, (Value, bool)> =
            self.rows("service").await?.into_iter().map(|(n, b, s)| (n, (b, s.is_some()))).collect();
        let env = &config.tmdb_environment;
        let mut services = Vec::new();
        for (name, kind) in kinds::SERVICE_NAMES {
            let mut view = match (config.services.get(*name), stored.get(*name)) {
                (Some(file), _) => json!({"name": name, "kind": kind, "source": "file", "baseUrl": file.base_url,
                    "secretSet": !matches!(file.auth, crate::config::Auth::None)}),
                (None, Some((body, secret))) => {
                    let mut v = body.clone();
                    v["name"] = json!(name);
                    v["kind"] = json!(kind);
                    v["source"] = json!("console");
                    v["secretSet"] = json!(secret);
                    v
                }
                (None, None) if *kind == ServiceKind::Tmdb && env.credential.is_some() => {
                    json!({"name": name, "kind": kind, "source": "environment", "baseUrl": env.base(), "secretSet": false})
                }
                (None, None) => {
                    json!({"name": name, "kind": kind, "source": "unset", "baseUrl": kinds::default_base(*kind), "secretSet": false})
                }
            };
            if *kind == ServiceKind::Tmdb && !config.services.contains_key(*name) {
                view["fromEnvironment"] = json!(tmdb_from_environment(env, stored.get(*name)));
            }
            services.push(view);
        }
        let stored_roots: BTreeMap<String, Value> =
            self.rows("root").await?.into_iter().map(|(n, b, _)| (n, b)).collect();
        let roots: Vec<Value> = kinds::ROOT_NAMES
            .iter()
            .map(|name| match (config.roots.get(*name), stored_roots.get(*name)) {
                (Some(path), _) => json!({"name": name, "path": path, "source": "file"}),
                (None, Some(body)) => json!({"name": name, "path": body["path"], "source": "console"}),
                (None, None) => json!({"name": name, "path": null, "source": "unset"}),
            })
            .collect();
        let library = self.row("library", "library").await?.map(|(b, _)| b).unwrap_or(json!({}));
        let file_keys: Vec<&str> = LIBRARY_SETTINGS
            .iter()
            .filter(|(_, capability, setting)| {
                config.capabilities.get(*capability).is_some_and(|c| c.settings.contains_key(*setting))
            })
            .map(|(field, _, _)| *field)
            .collect();
        Ok(json!({"services": services, "roots": roots, "library": library, "libraryFromFile": file_keys}))
    }
}

/// The folder `path` as root `name` (`downloads` or `library`) may be:
/// a root the console sets, not one `capstan.toml` sets, an absolute
/// existing folder apart from the host's own.
fn checked_root(config: &Config, name: &str, path: &str) -> Result<PathBuf, SetupError> {
    if !kinds::ROOT_NAMES.contains(&name) {
        return Err(SetupError::NotFound(format!("no root {name} can be set up here; they are downloads and library")));
    }
    if config.roots.contains_key(name) {
        return Err(SetupError::Conflict(format!("root {name} is set in capstan.toml; change it there")));
    }
    let dir = Path::new(path.trim());
    if !dir.is_absolute() {
        return Err(SetupError::Invalid(format!("{name} must be an absolute path, like /srv/{name}")));
    }
    if !dir.is_dir() {
        return Err(SetupError::Invalid(format!("{} is not a folder this host can see", dir.display())));
    }
    let mut check = config.clone();
    check.roots.insert(name.to_string(), dir.to_path_buf());
    check.check_root_overlaps().map_err(|e| SetupError::Invalid(e.to_string()))?;
    Ok(dir.to_path_buf())
}

/// Replaces the entry `section`/`name` in `tx`, which the caller commits.
async fn upsert_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    section: &str,
    name: &str,
    body: &Value,
    secret: Option<&str>,
    by: &str,
) -> Result<(), SetupError> {
    sqlx::query("DELETE FROM setup_entry WHERE section = $1 AND name = $2")
        .bind(section)
        .bind(name)
        .execute(&mut **tx)
        .await?;
    sqlx::query(
        "INSERT INTO setup_entry (section, name, body, secret, updated_at, updated_by) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(section)
    .bind(name)
    .bind(body.to_string())
    .bind(secret)
    .bind(now_ms())
    .bind(by)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The environment variables TMDB takes a value from, given its console
/// entry (`(body, secret set)`): the credential's when it has no key of its
/// own, the base URL's when there is no entry. Names only.
fn tmdb_from_environment(env: &TmdbEnvironment, stored: Option<&(Value, bool)>) -> Vec<&'static str> {
    let mut names = Vec::new();
    if let Some(credential) = env.credential
        && !stored.is_some_and(|(_, secret)| *secret)
    {
        names.push(credential);
    }
    if stored.is_none() && env.credential.is_some() && env.base_url.is_some() {
        names.push(crate::config::TMDB_BASE_URL_ENV);
    }
    names
}

/// Services, roots and capabilities' settings as they take effect.
#[derive(Debug, Clone, Default)]
pub struct Effective {
    pub services: BTreeMap<String, ServiceConfig>,
    pub roots: BTreeMap<String, PathBuf>,
    pub settings: BTreeMap<String, BTreeMap<String, String>>,
}

/// Puts the effective setup of `store` in place in `runtime`.
pub async fn apply(runtime: &Runtime, store: &SetupStore) -> anyhow::Result<()> {
    let config = runtime.config().clone();
    let effective = store.effective(&config).await?;
    runtime.reconfigure(&effective.services, &effective.roots, effective.settings)
}
