//! Console administrators and their sessions. Passwords are stored as
//! argon2id hashes (`capstan admin set-password`); logging in creates a
//! server-side session named by an `HttpOnly; SameSite=Strict` cookie —
//! also `Secure` when the browser came over HTTPS (`transport`), since a
//! browser drops a `Secure` cookie set over plain HTTP — and a CSRF token that every cookie-authenticated write must echo
//! in the `X-CSRF-Token` header.

use argon2::Argon2;
use argon2::password_hash::PasswordHasher;

use crate::store::{Db, new_id, now_ms};

/// The session cookie's name.
pub const COOKIE: &str = "capstan_session";
/// The header carrying the CSRF token.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";
/// How long a console session lasts.
pub(crate) const SESSION_MS: i64 = 12 * 3_600_000;
/// Shortest password accepted.
pub(crate) const MIN_PASSWORD: usize = 10;
/// Longest password accepted, in characters (sign-in refuses longer ones
/// before any work).
pub(crate) const MAX_PASSWORD: usize = 1024;
/// Longest administrator name.
pub const MAX_NAME: usize = 64;

/// A live console session.
#[derive(Debug, Clone)]
pub struct ConsoleSession {
    pub id: String,
    pub admin: String,
    pub csrf_token: String,
    pub expires_at: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Sql(#[from] sqlx::Error),
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    // Argon2 is deliberately slow; keep it off the async workers.
    tokio::task::spawn_blocking(f).await.expect("password hashing task panicked")
}

/// Sets (or replaces) an administrator's password.
pub async fn set_password(db: &Db, name: &str, password: &str) -> Result<(), SessionError> {
    if name.trim().is_empty() || name.chars().count() > MAX_NAME {
        return Err(SessionError::Invalid(format!("the administrator name must be 1 to {MAX_NAME} characters")));
    }
    if password.chars().count() < MIN_PASSWORD {
        return Err(SessionError::Invalid(format!("the password must be at least {MIN_PASSWORD} characters")));
    }
    if password.chars().count() > MAX_PASSWORD {
        return Err(SessionError::Invalid(format!("the password must be at most {MAX_PASSWORD} characters")));
    }
    let password = password.to_string();
    let hash = blocking(move || Argon2::default().hash_password(password.as_bytes()).map(|h| h.to_string()))
        .await
        .map_err(|e| SessionError::Invalid(format!("cannot hash the password: {e}")))?;
    sqlx::query(
        "INSERT INTO admin_user (name, password_hash, updated_at) VALUES ($1, $2, $3) \
         ON CONFLICT (name) DO UPDATE SET password_hash = excluded.password_hash, updated_at = excluded.updated_at",
    )
    .bind(name)
    .bind(hash)
    .bind(now_ms())
    .execute(&db.pool)
    .await?;
    // A new password ends the administrator's existing sessions.
    sqlx::query("DELETE FROM console_session WHERE admin = $1").bind(name).execute(&db.pool).await?;
    Ok(())
}

/// The stored password hash of administrator `name`, if there is one.
pub(crate) async fn stored_hash(db: &Db, name: &str) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar("SELECT password_hash FROM admin_user WHERE name = $1").bind(name).fetch_optional(&db.pool).await
}

/// Whether any administrator has a password (before one does, nobody can
/// sign in, and the console says how to set one).
pub(crate) async fn any_administrator(db: &Db) -> Result<bool, sqlx::Error> {
    let found: Option<i64> = sqlx::query_scalar("SELECT 1 FROM admin_user LIMIT 1").fetch_optional(&db.pool).await?;
    Ok(found.is_some())
}

/// Opens a session for administrator `name`, whose password was checked.
pub async fn open(db: &Db, name: &str) -> Result<ConsoleSession, sqlx::Error> {
    let session = ConsoleSession {
        id: format!("{}{}", new_id(), new_id()),
        admin: name.to_string(),
        csrf_token: new_id(),
        expires_at: now_ms() + SESSION_MS,
    };
    sqlx::query(
        "INSERT INTO console_session (id, admin, csrf_token, expires_at, created_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&session.id)
    .bind(&session.admin)
    .bind(&session.csrf_token)
    .bind(session.expires_at)
    .bind(now_ms())
    .execute(&db.pool)
    .await?;
    Ok(session)
}

/// The live session with this id, if any.
pub async fn find(db: &Db, id: &str) -> Result<Option<ConsoleSession>, sqlx::Error> {
    let row: Option<(String, String, i64)> =
        sqlx::query_as("SELECT admin, csrf_token, expires_at FROM console_session WHERE id = $1 AND expires_at > $2")
            .bind(id)
            .bind(now_ms())
            .fetch_optional(&db.pool)
            .await?;
    Ok(row.map(|(admin, csrf_token, expires_at)| ConsoleSession { id: id.to_string(), admin, csrf_token, expires_at }))
}

/// Ends a session.
pub async fn logout(db: &Db, id: &str) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM console_session WHERE id = $1").bind(id).execute(&db.pool).await?;
    Ok(())
}

fn secure_attribute(https: bool) -> &'static str {
    if https { "; Secure" } else { "" }
}

/// The `Set-Cookie` value that carries a session; `https` says whether the
/// browser's connection was encrypted.
pub fn cookie(session: &ConsoleSession, https: bool) -> String {
    format!(
        "{COOKIE}={}; HttpOnly{}; SameSite=Strict; Path=/; Max-Age={}",
        session.id,
        secure_attribute(https),
        SESSION_MS / 1000
    )
}

/// The `Set-Cookie` value that removes the session cookie.
pub(crate) fn expired_cookie(https: bool) -> String {
    format!("{COOKIE}=; HttpOnly{}; SameSite=Strict; Path=/; Max-Age=0", secure_attribute(https))
}
