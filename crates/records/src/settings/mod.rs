//! Host settings: the automation switches, the model and agent limits, and
//! secrets such as the model API key. Every key is declared in [`registry`]
//! with its type and bounds; a change naming an unknown key or a wrong type
//! is refused whole. Secrets are write-only and encrypted at rest
//! ([`secrets`]); reads say only whether one is set. A change may also be
//! written as one nested document ([`document`]). Owns the `setting`
//! table's meaning; who may change settings is the HTTP layer's call.

pub mod document;
pub mod registry;
pub mod secrets;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

pub use registry::{SETTINGS, SettingSpec, ValueKind};
pub use secrets::{MASTER_KEY_ENV, MasterKey, SecretError};

use crate::store::{Db, now_ms};

/// Why settings could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{0}")]
    Invalid(String),
    /// The value given for `key` is not one it can hold.
    #[error("{message}")]
    Field { key: String, message: String },
    #[error(transparent)]
    Secret(#[from] SecretError),
    #[error("database error: {0}")]
    Sql(#[from] sqlx::Error),
}

/// Checks a script setting's text beyond its size (the model script is the
/// scripted provider's to read, and the provider sits above settings).
pub(crate) type ScriptCheck = fn(&str) -> Result<(), String>;

/// Settings over one database; the master key is loaded on first use.
pub struct Settings {
    db: Db,
    data_dir: PathBuf,
    key: OnceLock<MasterKey>,
    check_script: ScriptCheck,
}

/// The spec of a setting that may be read in plain text.
fn plain_spec(key: &str) -> Result<&'static SettingSpec, SettingsError> {
    let spec = registry::find(key).ok_or_else(|| SettingsError::Invalid(format!("unknown setting {key}")))?;
    if spec.is_secret() {
        return Err(SettingsError::Invalid(format!("{key} is a secret; use Settings::secret")));
    }
    Ok(spec)
}

/// A stored value, or the default when it is unset (or, written by hand
/// into the database, is not JSON).
fn plain_value(spec: &SettingSpec, text: Option<&str>) -> Value {
    text.and_then(|t| serde_json::from_str(t).ok()).unwrap_or_else(|| spec.default_value())
}

/// The non-secret settings as one read saw them ([`Settings::snapshot`]).
pub struct SettingsSnapshot {
    stored: HashMap<String, String>,
}

impl SettingsSnapshot {
    /// The value of a non-secret setting, or its default, as
    /// [`Settings::get`] would have read it.
    pub fn get(&self, key: &str) -> Result<Value, SettingsError> {
        let spec = plain_spec(key)?;
        Ok(plain_value(spec, self.stored.get(key).map(String::as_str)))
    }
}

impl Settings {
    /// `check_script` judges the text of script settings before they are
    /// stored.
    pub fn new(db: Db, data_dir: PathBuf, check_script: ScriptCheck) -> Settings {
        Settings { db, data_dir, key: OnceLock::new(), check_script }
    }

    /// The master key, loading (or creating) it the first time.
    pub fn master_key(&self) -> Result<&MasterKey, SecretError> {
        if let Some(key) = self.key.get() {
            return Ok(key);
        }
        let key = MasterKey::load(&self.data_dir)?;
        Ok(self.key.get_or_init(|| key))
    }

    /// Every stored row, key to text as stored (secrets encrypted).
    async fn stored(&self) -> Result<HashMap<String, String>, SettingsError> {
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT key, value FROM setting").fetch_all(&self.db.pool).await?;
        Ok(rows.into_iter().collect())
    }

    /// Every setting with its current value (the default when unset).
    /// Secrets show `{"set": true|false}` and nothing else.
    pub async fn all(&self) -> Result<Value, SettingsError> {
        let stored = self.stored().await?;
        let mut values = Map::new();
        for spec in SETTINGS {
            let raw = stored.get(spec.key).map(String::as_str);
            let value = match (spec.is_secret(), raw) {
                (true, raw) => json!({ "set": raw.is_some() }),
                (false, Some(text)) => serde_json::from_str(text).unwrap_or(Value::Null),
                (false, None) => spec.default_value(),
            };
            values.insert(spec.key.to_string(), value);
        }
        Ok(Value::Object(values))
    }

    /// The value of a non-secret setting, or its default.
    pub async fn get(&self, key: &str) -> Result<Value, SettingsError> {
        let spec = plain_spec(key)?;
        let text: Option<String> = sqlx::query_scalar("SELECT value FROM setting WHERE key = $1")
            .bind(key)
            .fetch_optional(&self.db.pool)
            .await?;
        Ok(plain_value(spec, text.as_deref()))
    }

    /// Every non-secret setting as it stands now, read in one statement:
    /// for a caller that needs many (a run's limits are a dozen).
    pub async fn snapshot(&self) -> Result<SettingsSnapshot, SettingsError> {
        let mut stored = self.stored().await?;
        stored.retain(|key, _| registry::find(key).is_some_and(|s| !s.is_secret()));
        Ok(SettingsSnapshot { stored })
    }

    /// The plaintext of a secret setting, for the one request that needs it.
    pub async fn secret(&self, key: &str) -> Result<Option<String>, SettingsError> {
        match registry::find(key) {
            Some(spec) if spec.is_secret() => {}
            _ => return Err(SettingsError::Invalid(format!("{key} is not a secret setting"))),
        }
        let text: Option<String> = sqlx::query_scalar("SELECT value FROM setting WHERE key = $1")
            .bind(key)
            .fetch_optional(&self.db.pool)
            .await?;
        text.map(|t| self.master_key()?.decrypt(key, &t).map_err(SettingsError::from)).transpose()
    }

    /// Applies `changes` (`key → value`, `null` resets to the default or
    /// clears a secret) all together, or none of them when one is invalid.
    pub async fn update(&self, changes: &Map<String, Value>) -> Result<(), SettingsError> {
        let writes = self.prepare(changes)?;
        let mut tx = self.db.begin_write().await?;
        writes.write(&mut tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Checks `changes` and makes them ready to write (secrets encrypted),
    /// writing nothing: a change that spans more than the settings writes
    /// them in its own transaction ([`Writes::write`]). A value may be
    /// spelled as [`document::VALUE_ALIASES`] allow.
    pub fn prepare(&self, changes: &Map<String, Value>) -> Result<Writes, SettingsError> {
        if changes.is_empty() {
            return Err(SettingsError::Invalid("no settings to change".into()));
        }
        let mut writes = Vec::new();
        for (key, value) in changes {
            let spec = registry::find(key).ok_or_else(|| SettingsError::Field {
                key: key.clone(),
                message: format!("unknown setting {key}; GET /settings lists the known ones"),
            })?;
            let stored = match document::unalias(key, value) {
                Value::Null => None,
                value => {
                    spec.check(&value, self.check_script)
                        .map_err(|message| SettingsError::Field { key: key.clone(), message })?;
                    Some(match (spec.is_secret(), &value) {
                        (true, Value::String(plain)) => self.master_key()?.encrypt(key, plain),
                        _ => value.to_string(),
                    })
                }
            };
            writes.push((key.clone(), stored));
        }
        Ok(Writes(writes))
    }

    /// What each setting is: type, bounds, default, help.
    pub fn describe() -> Value {
        Value::Object(SETTINGS.iter().map(|s| (s.key.to_string(), s.describe())).collect())
    }
}

/// Checked settings ready to be written: each key's stored text, or
/// `None` to reset it.
#[derive(Debug)]
pub struct Writes(Vec<(String, Option<String>)>);

impl Writes {
    /// Writes them in `tx`, which the caller commits.
    pub async fn write(&self, tx: &mut sqlx::Transaction<'_, sqlx::Any>) -> Result<(), sqlx::Error> {
        let now = now_ms();
        for (key, stored) in &self.0 {
            match stored {
                Some(text) => {
                    sqlx::query(
                        "INSERT INTO setting (key, value, updated_at) VALUES ($1, $2, $3) \
                         ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                    )
                    .bind(key)
                    .bind(text)
                    .bind(now)
                    .execute(&mut **tx)
                    .await?;
                }
                None => {
                    sqlx::query("DELETE FROM setting WHERE key = $1").bind(key).execute(&mut **tx).await?;
                }
            }
        }
        Ok(())
    }
}
