-- The plugins of a PostgreSQL cluster, which every node loads: what a node
-- found dropped into its folder is published here by file name, its bytes
-- kept by digest, so nodes that share no folder run the same plugins. The
-- record of what is known, held, accepted and refused (the state file of a
-- one-machine install) is `capability_catalog.state`, written only at the
-- version it was read at; every change to the catalog moves `version`,
-- which the nodes poll. On SQLite these tables stay empty.
CREATE TABLE capability_catalog (
    id BIGINT PRIMARY KEY,
    state TEXT,
    version BIGINT NOT NULL
);
INSERT INTO capability_catalog (id, state, version) VALUES (1, NULL, 0);
CREATE TABLE capability_plugin (
    name TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    node TEXT NOT NULL,
    changed_at BIGINT NOT NULL
);
CREATE TABLE component_blob (
    digest TEXT PRIMARY KEY,
    bytes BYTEA NOT NULL
);
