//! API keys: `cap_<id>_<secret>`, shown once at creation and stored as the
//! SHA-256 of the secret (a random 256-bit value, so a fast hash is enough).
//! A key's scopes are effect classes; a key may invoke a capability only
//! when one of its scopes reaches the capability's label.

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

/// Checks a presented key; `None` for anything malformed, unknown or revoked.
pub async fn authenticate(db: &Db, presented: &str) -> Result<Option<ApiKey>, sqlx::Error> {
    let Some((id, secret)) = presented.strip_prefix("cap_").and_then(|rest| rest.split_once('_')) else {
        return Ok(None);
    };
    let row: Option<(String, String, String, Option<i64>)> =
        sqlx::query_as("SELECT name, secret_hash, scopes, revoked_at FROM api_key WHERE id = $1")
            .bind(id)
            .fetch_optional(&db.pool)
            .await?;
    let Some((name, stored, scopes, revoked)) = row else { return Ok(None) };
    // Compare digests, not secrets, so timing says nothing about the secret.
    if revoked.is_some() || hash(secret) != stored {
        return Ok(None);
    }
    let scopes: Vec<String> = serde_json::from_str(&scopes).unwrap_or_default();
    Ok(Some(ApiKey { id: id.to_string(), name, scopes: scopes.iter().filter_map(|s| EffectClass::parse(s)).collect() }))
}
