//! Databases for the storage suites: a fresh SQLite file, or a fresh
//! database on the throwaway PostgreSQL server that `scripts/test.sh`
//! starts (its URL is in `CAPSTAN_TEST_POSTGRES_URL`).

use capstan::store::Db;

/// The two storage backends every storage suite runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The server URL the test command exports.
pub const POSTGRES_ENV: &str = "CAPSTAN_TEST_POSTGRES_URL";

/// A URL for a new, empty database of `backend`. SQLite files go in `dir`.
pub async fn fresh_url(backend: Backend, dir: &std::path::Path) -> String {
    match backend {
        Backend::Sqlite => Db::default_url(dir),
        Backend::Postgres => {
            let server = std::env::var(POSTGRES_ENV).unwrap_or_else(|_| {
                panic!("{POSTGRES_ENV} is not set: run the suites with scripts/test.sh, which starts a throwaway PostgreSQL")
            });
            let admin = Db::connect(&server).await.expect("cannot reach the test PostgreSQL");
            let name = format!("capstan_test_{}", capstan::store::new_id());
            sqlx::query(&format!("CREATE DATABASE {name}")).execute(&admin.pool).await.unwrap();
            admin.pool.close().await;
            let (base, _) = server.rsplit_once('/').expect("a URL with a database name");
            format!("{base}/{name}")
        }
    }
}

/// Runs an async test body once per backend, as two named tests.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread")]
                async fn sqlite() {
                    super::$name($crate::db::Backend::Sqlite).await
                }

                #[tokio::test(flavor = "multi_thread")]
                async fn postgres() {
                    super::$name($crate::db::Backend::Postgres).await
                }
            }
        )*
    };
}
