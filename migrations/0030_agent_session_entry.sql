-- Agent session logs kept in the database, one row per line of the log, so
-- that any node of a PostgreSQL cluster can take a run over without a
-- shared folder. On SQLite (one machine) the logs stay files and this table
-- is empty. `seq` counts a run's lines from 0; a worker that lost its run to
-- another and still writes meets the primary key and stops.
CREATE TABLE agent_session_entry (
    run_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
