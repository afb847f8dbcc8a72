//! Where every console walk starts: a fresh Capstan on SQLite served on
//! loopback, and a new browser signed in as an administrator.

use capstan::app::App;
use capstan::store::Db;

use crate::browser::Browser;
use crate::db::{Backend, fresh_url};
use crate::host::TestHost;

/// The administrator the walks sign in as, and their password.
pub const USER: (&str, &str) = ("newcomer", "correct horse battery");

/// A served Capstan and a browser signed in to its console.
pub struct Walk {
    /// Holds the data folder; dropped last.
    pub host: TestHost,
    pub db: Db,
    pub app: std::sync::Arc<App>,
    /// The API's base URL (`…/api/v1`).
    pub base: String,
    pub browser: Browser,
}

/// Starts Capstan with `host`'s setup and signs a browser in as [`USER`].
pub async fn signed_in(host: TestHost) -> Walk {
    let db = Db::open(&fresh_url(Backend::Sqlite, host.dir.path()).await).await.unwrap();
    let app = App::start(host.config.clone(), db.clone(), capstan::store::new_id()).await.unwrap();
    let base = crate::api::serve(app.clone()).await;
    let root = base.trim_end_matches("/api/v1").to_string();
    capstan::http::session::set_password(&db, USER.0, USER.1).await.unwrap();
    let browser = Browser::start().await;
    browser.sign_in(&root, USER.0, USER.1).await;
    Walk { host, db, app, base, browser }
}
