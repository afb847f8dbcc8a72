-- API keys: stored as SHA-256 of their secret part, with effect-class scopes.

CREATE TABLE api_key (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    secret_hash TEXT NOT NULL,
    scopes      TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);
