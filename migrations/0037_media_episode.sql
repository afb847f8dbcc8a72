-- The episodes of a wanted series, as the catalogue lists them (numbers,
-- titles, air dates), whether the library wants each one, and the file an
-- import put in the library for it. A season slot stays the unit a search
-- and a plan fetch for; the episodes say what the slot still lacks.
CREATE TABLE media_episode (
    entity_id  TEXT NOT NULL REFERENCES media_entity (id),
    season     BIGINT NOT NULL,
    episode    BIGINT NOT NULL,
    absolute   BIGINT,
    title      TEXT,
    air_date   TEXT,
    monitored  BIGINT NOT NULL,
    file       TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (entity_id, season, episode)
);
