//! The runtime's [`Catalog`] in the database: the plugins every node of a
//! PostgreSQL cluster loads (`capability_plugin`, their bytes in
//! `component_blob`) and the record of what is known, held, accepted and
//! refused (`capability_catalog`). Only used on PostgreSQL; on SQLite one
//! machine serves from its folder and state file.
//!
//! Every write takes the catalog's one row first (moving its version), so
//! writers of the catalog take turns on it and never deadlock; the record
//! is replaced only at the version it was read at.

use futures_util::future::BoxFuture;
use sqlx::Row;

use crate::runtime::{Catalog, CatalogPlugin};
use crate::store::{Backend, Db};

/// The plugin catalog in the database.
#[derive(Clone)]
pub struct PluginCatalog {
    db: Db,
}

const BUMP: &str = "UPDATE capability_catalog SET version = version + 1 WHERE id = 1";

impl PluginCatalog {
    /// The catalog over `db` when it is PostgreSQL; `None` on SQLite.
    pub fn for_db(db: &Db) -> Option<PluginCatalog> {
        (db.backend == Backend::Postgres).then(|| PluginCatalog { db: db.clone() })
    }

    async fn read_state(&self) -> Result<(Option<String>, i64), sqlx::Error> {
        let row =
            sqlx::query("SELECT state, version FROM capability_catalog WHERE id = 1").fetch_one(&self.db.pool).await?;
        Ok((row.try_get("state")?, row.try_get("version")?))
    }

    async fn write_state(&self, json: &str, version: i64, keep: &[String]) -> Result<bool, sqlx::Error> {
        let mut tx = self.db.pool.begin().await?;
        let saved = sqlx::query(
            "UPDATE capability_catalog SET state = $1, version = version + 1 WHERE id = 1 AND version = $2",
        )
        .bind(json)
        .bind(version)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        if !saved {
            return Ok(false);
        }
        // Bytes no plugin and no version on record names any more.
        let mut sql =
            "DELETE FROM component_blob WHERE digest NOT IN (SELECT digest FROM capability_plugin)".to_string();
        if !keep.is_empty() {
            let placeholders: Vec<String> = (1..=keep.len()).map(|i| format!("${i}")).collect();
            sql.push_str(&format!(" AND digest NOT IN ({})", placeholders.join(", ")));
        }
        let mut query = sqlx::query(&sql);
        for digest in keep {
            query = query.bind(digest);
        }
        query.execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn list(&self) -> Result<Vec<CatalogPlugin>, sqlx::Error> {
        let rows = sqlx::query("SELECT name, digest, node, changed_at FROM capability_plugin ORDER BY name")
            .fetch_all(&self.db.pool)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(CatalogPlugin {
                    name: r.try_get("name")?,
                    digest: r.try_get("digest")?,
                    node: r.try_get("node")?,
                    changed_ms: r.try_get("changed_at")?,
                })
            })
            .collect()
    }

    async fn put(&self, plugin: &CatalogPlugin, bytes: &[u8]) -> Result<(), sqlx::Error> {
        let mut tx = self.db.pool.begin().await?;
        sqlx::query(BUMP).execute(&mut *tx).await?;
        sqlx::query("INSERT INTO component_blob (digest, bytes) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING")
            .bind(&plugin.digest)
            .bind(bytes.to_vec())
            .execute(&mut *tx)
            .await?;
        // The copy that changed last wins, whichever node publishes first.
        sqlx::query(
            "INSERT INTO capability_plugin (name, digest, node, changed_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (name) DO UPDATE SET digest = EXCLUDED.digest, node = EXCLUDED.node, \
             changed_at = EXCLUDED.changed_at WHERE capability_plugin.changed_at < EXCLUDED.changed_at",
        )
        .bind(&plugin.name)
        .bind(&plugin.digest)
        .bind(&plugin.node)
        .bind(plugin.changed_ms)
        .execute(&mut *tx)
        .await?;
        tx.commit().await
    }

    async fn remove(&self, name: &str, node: &str) -> Result<(), sqlx::Error> {
        let mut tx = self.db.pool.begin().await?;
        sqlx::query(BUMP).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM capability_plugin WHERE name = $1 AND node = $2")
            .bind(name)
            .bind(node)
            .execute(&mut *tx)
            .await?;
        tx.commit().await
    }

    async fn blob(&self, digest: &str) -> Result<Option<Vec<u8>>, sqlx::Error> {
        sqlx::query_scalar("SELECT bytes FROM component_blob WHERE digest = $1")
            .bind(digest)
            .fetch_optional(&self.db.pool)
            .await
    }
}

fn words<T>(result: Result<T, sqlx::Error>) -> Result<T, String> {
    result.map_err(|e| e.to_string())
}

impl Catalog for PluginCatalog {
    fn state(&self) -> BoxFuture<'_, Result<(Option<String>, i64), String>> {
        Box::pin(async move { words(self.read_state().await) })
    }

    fn save_state<'a>(
        &'a self,
        json: &'a str,
        version: i64,
        keep: &'a [String],
    ) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move { words(self.write_state(json, version, keep).await) })
    }

    fn plugins(&self) -> BoxFuture<'_, Result<Vec<CatalogPlugin>, String>> {
        Box::pin(async move { words(self.list().await) })
    }

    fn publish<'a>(&'a self, plugin: &'a CatalogPlugin, bytes: &'a [u8]) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move { words(self.put(plugin, bytes).await) })
    }

    fn withdraw<'a>(&'a self, name: &'a str, node: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move { words(self.remove(name, node).await) })
    }

    fn bytes<'a>(&'a self, digest: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, String>> {
        Box::pin(async move { words(self.blob(digest).await) })
    }

    fn version(&self) -> BoxFuture<'_, Result<i64, String>> {
        // Polled by every node every 2 s: the number alone, not the record.
        Box::pin(async move {
            words(
                sqlx::query_scalar("SELECT version FROM capability_catalog WHERE id = 1")
                    .fetch_one(&self.db.pool)
                    .await,
            )
        })
    }
}
