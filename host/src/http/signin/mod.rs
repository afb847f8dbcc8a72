//! Signing in to the console: the one path from a name and a password to
//! a session. Every attempt, for a name that exists or not, costs the same
//! password check and gets the same answer, so neither timing nor words
//! say which names exist; checks run on a small fixed pool
//! (`hasher`), so a flood of attempts cannot take the host's memory or
//! CPU; and attempts are throttled per client and per account
//! (`throttle`), answered `429` with `Retry-After` when paused. A pause
//! that begins is written to the audit log; every outcome is counted in
//! the metrics.

pub mod hasher;
pub mod throttle;

use std::net::IpAddr;
use std::time::{Duration, Instant};

use hasher::PasswordPool;
use throttle::{ClientKey, Paused, Throttle, ThrottleVerdict};

use super::session::{self, ConsoleSession};
use crate::app::App;
use crate::audit::NewAuditEntry;

/// Why a sign-in did not open a session.
#[derive(Debug)]
pub enum SignInRefusal {
    /// The name or the password is wrong (the answer does not say which).
    Wrong,
    /// No administrator has a password yet, so nobody can sign in.
    NoAdministrator,
    /// Too many failures from this client or on this account: try after this.
    Paused(Duration),
    /// Every password check is taken: try again in a moment.
    Busy,
    Sql(sqlx::Error),
}

impl From<sqlx::Error> for SignInRefusal {
    fn from(e: sqlx::Error) -> Self {
        SignInRefusal::Sql(e)
    }
}

/// The sign-in gate this process keeps.
#[derive(Default)]
pub struct SignIn {
    pool: PasswordPool,
    throttle: Throttle,
}

impl SignIn {
    /// Checks `name` and `password` from `client` and opens a session.
    pub async fn sign_in(
        &self,
        app: &App,
        client: IpAddr,
        name: &str,
        password: &str,
    ) -> Result<ConsoleSession, SignInRefusal> {
        let refused = self.attempt(app, client, name, password).await;
        let outcome = match &refused {
            Ok(_) => "succeeded",
            Err(SignInRefusal::Wrong) => "failed",
            Err(SignInRefusal::NoAdministrator) => "no_administrator",
            Err(SignInRefusal::Paused(_)) => "paused",
            Err(SignInRefusal::Busy) => "busy",
            Err(SignInRefusal::Sql(_)) => "error",
        };
        app.caps().metrics().signed_in(outcome);
        refused
    }

    async fn attempt(
        &self,
        app: &App,
        client: IpAddr,
        name: &str,
        password: &str,
    ) -> Result<ConsoleSession, SignInRefusal> {
        let key = ClientKey::of(client);
        if let ThrottleVerdict::Wait(wait) = self.throttle.attempt(key, name, Instant::now()) {
            return Err(SignInRefusal::Paused(wait));
        }
        let db = &app.services().db;
        let matched = match self.check(db, name, password).await {
            Ok(matched) => matched,
            // Never checked: the attempt counts neither way.
            Err(refusal) => {
                self.throttle.abandoned(key, name);
                return Err(refusal);
            }
        };
        for paused in self.throttle.finished(key, name, matched, Instant::now()) {
            audit_pause(app, client, name, &paused).await;
        }
        if !matched {
            return Err(SignInRefusal::Wrong);
        }
        Ok(session::open(db, name).await?)
    }

    /// Whether `password` is `name`'s, after the same work either way.
    async fn check(&self, db: &crate::store::Db, name: &str, password: &str) -> Result<bool, SignInRefusal> {
        let stored = session::stored_hash(db, name).await?;
        if stored.is_none() && !session::any_administrator(db).await? {
            return Err(SignInRefusal::NoAdministrator);
        }
        self.pool.verify(stored, password).await.map_err(|hasher::Busy| SignInRefusal::Busy)
    }
}

/// Records a pause that a failure began. A failed append is logged and
/// the pause stands.
async fn audit_pause(app: &App, client: IpAddr, name: &str, paused: &Paused) {
    let (whose, failures, pause) = match paused {
        Paused::Client { failures, pause } => (format!("sign-in from {client}"), failures, pause),
        Paused::Account { failures, pause } => {
            (format!("sign-in as {name:?} from clients that failed"), failures, pause)
        }
    };
    let detail = format!("{failures} failed sign-ins; {whose} is paused for {} s", pause.as_secs());
    let event = NewAuditEntry {
        actor_kind: "http-client".into(),
        principal: format!("client:{client}"),
        action: "session.sign_in_paused".into(),
        subject: name.chars().take(64).collect(),
        outcome: "paused".into(),
        detail: Some(detail),
        ..NewAuditEntry::default()
    };
    if let Err(e) = app.audit().append(&event).await {
        tracing::warn!(error = %e, "could not record a sign-in pause in the audit log");
    }
}
