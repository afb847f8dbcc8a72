-- Console administrators (argon2 password hashes) and their sessions.

CREATE TABLE admin_user (
    name          TEXT PRIMARY KEY,
    password_hash TEXT NOT NULL,
    updated_at    BIGINT NOT NULL
);

CREATE TABLE console_session (
    id         TEXT PRIMARY KEY,
    admin      TEXT NOT NULL,
    csrf_token TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
