//! A settings change as `PATCH /settings` takes it: flat registry keys,
//! the nested document ([`crate::settings::document`]) and its `metadata`
//! section — TMDB's key (`tmdbApiKey`, a v3 key) and base URL
//! (`tmdbBaseUrl`), which are TMDB's connection as the console's Services
//! page keeps it. Everything is checked first and then written in one
//! transaction, settings and TMDB together: one bad value and nothing
//! changes. TMDB set in `capstan.toml` is the file's (a conflict).

use serde_json::{Map, Value, json};

use super::kinds::{self, ServiceEntry, ServiceKind};
use super::{SetupError, SetupStore, secret_name, upsert_in};
use crate::config::Config;
use crate::settings::SettingsError;
use crate::settings::document::Document;

/// The document's section that is TMDB's connection.
pub const METADATA: &str = "metadata";
/// TMDB's v3 API key, sent as the `api_key` query parameter.
pub const TMDB_API_KEY: &str = "tmdbApiKey";
/// TMDB's API base URL.
pub const TMDB_BASE_URL: &str = "tmdbBaseUrl";

/// Why a settings change was refused.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// `field` (its name in the document) cannot hold what was given.
    #[error("{message}")]
    Field { field: String, message: String },
    /// `field` names what `capstan.toml` sets.
    #[error("{message}")]
    SetInFile { field: String, message: String },
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("database error: {0}")]
    Sql(#[from] sqlx::Error),
}

/// What a change changed.
#[derive(Debug, Default)]
pub struct Changed {
    /// The registry keys set or reset.
    pub settings: Vec<String>,
    /// Whether TMDB's connection changed.
    pub tmdb: bool,
}

/// The `metadata` section's schema, as the body check enforces it.
pub fn metadata_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "minProperties": 1,
        "description": "TMDB's connection, as the Services page keeps it.",
        "properties": {
            TMDB_API_KEY: {"type": "string", "writeOnly": true, "minLength": 1, "maxLength": 4096, "pattern": crate::text::not_blank_pattern(),
                "not": {"pattern": kinds::reference_pattern()},
                "description": "TMDB's v3 API key (sent as api_key); encrypted at rest. One starting with env: or file: is refused: it is sent as typed."},
            TMDB_BASE_URL: {"type": "string", "format": "uri", "pattern": crate::text::service_url_pattern(),
                "description": "TMDB's API base URL, https://api.themoviedb.org/3 by default: http or https, without a query, a fragment or credentials."},
        },
    })
}

/// TMDB's entry as a change leaves it: its body and stored secret.
struct TmdbWrite {
    body: Value,
    secret: Option<String>,
}

fn field(name: &str, message: impl Into<String>) -> ChangeError {
    ChangeError::Field { field: format!("{METADATA}.{name}"), message: message.into() }
}

impl SetupStore {
    /// Applies a settings change (`body` as `PATCH /settings` takes it),
    /// all of it or none.
    pub async fn change_settings(
        &self,
        config: &Config,
        body: &Map<String, Value>,
        by: &str,
    ) -> Result<Changed, ChangeError> {
        let doc = Document::read(body, &[METADATA])?;
        let writes = if doc.settings.is_empty() {
            None
        } else {
            Some(self.settings.prepare(&doc.settings).map_err(|e| doc.name_error(e))?)
        };
        let tmdb = match doc.other.get(METADATA) {
            Some(metadata) => Some(self.tmdb_write(config, metadata).await?),
            None => None,
        };
        let mut tx = self.db.begin_write().await?;
        if let Some(writes) = &writes {
            writes.write(&mut tx).await?;
        }
        if let Some(tmdb) = &tmdb {
            upsert_in(&mut tx, "service", "tmdb", &tmdb.body, tmdb.secret.as_deref(), by).await?;
        }
        tx.commit().await?;
        Ok(Changed { settings: doc.keys().cloned().collect(), tmdb: tmdb.is_some() })
    }

    /// TMDB's entry with `metadata`'s key and base URL, checked: a key
    /// replaces the stored credential (as a v3 key); a base URL alone keeps
    /// it; a new entry without a base URL takes the one in effect
    /// (`TMDB_BASE_URL`, or TMDB's own).
    async fn tmdb_write(&self, config: &Config, metadata: &Value) -> Result<TmdbWrite, ChangeError> {
        let fields = metadata.as_object().filter(|f| !f.is_empty()).ok_or_else(|| ChangeError::Field {
            field: METADATA.into(),
            message: format!("{METADATA} must be an object with {TMDB_API_KEY} or {TMDB_BASE_URL}"),
        })?;
        let mut key = None;
        let mut base_url = None;
        for (name, value) in fields {
            let slot = match name.as_str() {
                TMDB_API_KEY => &mut key,
                TMDB_BASE_URL => &mut base_url,
                other => return Err(field(other, format!("unknown setting {METADATA}.{other}"))),
            };
            let text = value.as_str().map(str::trim).filter(|t| !t.is_empty());
            *slot = Some(text.ok_or_else(|| field(name, format!("{METADATA}.{name} must be a text")))?);
        }
        let first = if key.is_some() { TMDB_API_KEY } else { TMDB_BASE_URL };
        if config.services.contains_key("tmdb") {
            let message = "TMDB is set in capstan.toml ([services.tmdb]); change it there";
            return Err(ChangeError::SetInFile { field: format!("{METADATA}.{first}"), message: message.into() });
        }
        let env = &config.tmdb_environment;
        let stored = self.row("service", "tmdb").await?;
        let mut entry = match &stored {
            Some((body, _)) => serde_json::from_value::<ServiceEntry>(body.clone())
                .map_err(|e| SetupError::Invalid(format!("stored service tmdb: {e}")))?,
            None => ServiceEntry::at(env.base()),
        };
        if let Some(url) = base_url {
            entry.base_url = url.trim_end_matches('/').to_string();
        }
        let master = self.settings.master_key().map_err(|e| SetupError::Secret(e.to_string()))?;
        let secret = match key {
            Some(key) => {
                kinds::literal_secret(key).map_err(|e| field(TMDB_API_KEY, e))?;
                entry.token_kind = Some("apiKey".into());
                Some(master.encrypt(&secret_name("tmdb"), key))
            }
            None => stored.and_then(|(_, secret)| secret),
        };
        if secret.is_none() && env.credential.is_none() {
            return Err(field(
                first,
                format!(
                    "TMDB has no key: give {METADATA}.{TMDB_API_KEY} too, or start Capstan with {} or {}",
                    crate::config::TMDB_API_KEY_ENV,
                    crate::config::TMDB_ACCESS_TOKEN_ENV
                ),
            ));
        }
        // The URL is checked as the service will use it; the key is not
        // needed for that.
        let service = kinds::service_config(ServiceKind::Tmdb, &entry, "").map_err(|e| field(first, e))?;
        service.validate("tmdb").map_err(|e| {
            let name = format!("{METADATA}.{TMDB_BASE_URL}");
            ChangeError::Field { message: e.replace("services.tmdb.base_url", &name), field: name }
        })?;
        Ok(TmdbWrite { body: json!(entry), secret })
    }
}
