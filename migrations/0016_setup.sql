-- What an operator set up in the console: outbound services (kind, base
-- URL, user; the secret encrypted like other secrets), file roots, and the
-- library's naming and download placement. capstan.toml wins over a row of
-- the same name; the console shows those as set by the file.
CREATE TABLE setup_entry (
    section    TEXT NOT NULL,
    name       TEXT NOT NULL,
    body       TEXT NOT NULL,
    secret     TEXT,
    updated_at BIGINT NOT NULL,
    updated_by TEXT NOT NULL,
    PRIMARY KEY (section, name)
);
