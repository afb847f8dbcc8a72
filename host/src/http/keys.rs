//! API keys: `cap_<id>_<secret>`, shown once at creation and stored as the
//! SHA-256 of the secret (a random 256-bit value, so a fast hash is enough).
//! A key's scopes are effect classes; a key may invoke a capability only
//! when one of its scopes reaches the capability's label. What the database
//! says of a key is kept for a second ([`KeyCache`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::runtime::EffectClass;
use crate::store::{Db, new_id, now_ms};

/// An authenticated key.
#[derive(Debug, Clone)]
pub struct ApiKey {
    pub id: String,
    pub name: String,
    pub scopes: Vec<EffectClass>,
}

impl ApiKey {
    /// The highest class this key may use.
    pub fn ceiling(&self) -> Option<EffectClass> {
        self.scopes.iter().copied().max()
    }
}

fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Creates a key and returns its full text, which is never shown again.
pub async fn create(db: &Db, name: &str, scopes: &[EffectClass], by: &str) -> Result<String, sqlx::Error> {
    let id = new_id()[..12].to_string();
    let secret = format!("{}{}", new_id(), new_id());
    let names: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
    sqlx::query(
        "INSERT INTO api_key (id, name, secret_hash, scopes, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&id)
    .bind(name)
    .bind(hash(&secret))
    .bind(serde_json::to_string(&names).unwrap_or_else(|_| "[]".into()))
    .bind(by)
    .bind(now_ms())
    .execute(&db.pool)
    .await?;
    Ok(format!("cap_{id}_{secret}"))
}

/// A key as `capstan admin list-keys` shows it (never its secret).
#[derive(Debug, Clone)]
pub struct KeyRow {
    pub id: String,
    pub name: String,
    pub scopes: Vec<String>,
    pub created_by: String,
    pub revoked: bool,
}

/// Every key, oldest first.
pub async fn list(db: &Db) -> Result<Vec<KeyRow>, sqlx::Error> {
    let rows: Vec<(String, String, String, String, Option<i64>)> =
        sqlx::query_as("SELECT id, name, scopes, created_by, revoked_at FROM api_key ORDER BY created_at, id")
            .fetch_all(&db.pool)
            .await?;
    Ok(rows
        .into_iter()
        .map(|(id, name, scopes, created_by, revoked)| KeyRow {
            id,
            name,
            scopes: serde_json::from_str(&scopes).unwrap_or_default(),
            created_by,
            revoked: revoked.is_some(),
        })
        .collect())
}

/// Revokes key `id`, auditing who did; `false` when no active key has it.
pub async fn revoke(db: &Db, id: &str, by: &str) -> Result<bool, sqlx::Error> {
    let mut tx = db.begin_write().await?;
    let changed = sqlx::query("UPDATE api_key SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
        .bind(now_ms())
        .bind(id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if changed == 1 {
        let event = crate::audit::NewAuditEntry {
            actor_kind: "cli".into(),
            principal: by.into(),
            action: "api_key.revoke".into(),
            subject: id.into(),
            outcome: "revoked".into(),
            ..Default::default()
        };
        crate::audit::Audit::append_in(&mut tx, &event).await?;
    }
    tx.commit().await?;
    Ok(changed == 1)
}

/// How long what the database said of a key is believed: a key created
/// or revoked by another process (`capstan admin`) takes effect here within
/// this time.
pub(crate) const KEY_CACHE_TTL: Duration = Duration::from_secs(1);

/// Most keys remembered at once; past it the cache starts over, so random
/// ids cannot grow it.
const KEY_CACHE_MAX: usize = 4096;

/// What the database said of a key id, for [`KEY_CACHE_TTL`]: every API
/// request authenticates, and reading the key row each time was the
/// largest share of a read invoke's database work.
#[derive(Default)]
pub struct KeyCache {
    entries: Mutex<HashMap<String, Cached>>,
}

struct Cached {
    at: Instant,
    /// `(secret hash, key)`; `None` when no usable key has this id.
    row: Option<(String, ApiKey)>,
}

/// Checks a presented key; `None` for anything malformed, unknown or revoked.
pub async fn authenticate(db: &Db, cache: &KeyCache, presented: &str) -> Result<Option<ApiKey>, sqlx::Error> {
    let Some((id, secret)) = presented.strip_prefix("cap_").and_then(|rest| rest.split_once('_')) else {
        return Ok(None);
    };
    let known = {
        let entries = cache.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.get(id).filter(|c| c.at.elapsed() < KEY_CACHE_TTL).map(|c| c.row.clone())
    };
    let row = match known {
        Some(row) => row,
        None => {
            let row = lookup(db, id).await?;
            let mut entries = cache.entries.lock().unwrap_or_else(|e| e.into_inner());
            if entries.len() >= KEY_CACHE_MAX {
                entries.clear();
            }
            entries.insert(id.to_string(), Cached { at: Instant::now(), row: row.clone() });
            row
        }
    };
    // Compare digests, not secrets, so timing says nothing about the secret.
    Ok(row.filter(|(stored, _)| hash(secret) == *stored).map(|(_, key)| key))
}

/// The key row `id`, when it exists and is not revoked.
async fn lookup(db: &Db, id: &str) -> Result<Option<(String, ApiKey)>, sqlx::Error> {
    let row: Option<(String, String, String, Option<i64>)> =
        sqlx::query_as("SELECT name, secret_hash, scopes, revoked_at FROM api_key WHERE id = $1")
            .bind(id)
            .fetch_optional(&db.pool)
            .await?;
    let Some((name, stored, scopes, revoked)) = row else { return Ok(None) };
    if revoked.is_some() {
        return Ok(None);
    }
    let scopes: Vec<String> = serde_json::from_str(&scopes).unwrap_or_default();
    let scopes = scopes.iter().filter_map(|s| EffectClass::parse(s)).collect();
    Ok(Some((stored, ApiKey { id: id.to_string(), name, scopes })))
}
