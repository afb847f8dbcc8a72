-- What the library holds for a slot, so a better release can be told from
-- one that is not: for a movie's slot its file (relative to the library
-- root) and the release it came from; for a series each episode's release
-- beside the file it already records. An organization that replaces files
-- the library holds (an upgrade) says so: it is carried out by its own
-- capability under its own plan type. Files imported before this
-- migration have no recorded release, and are never upgraded.
ALTER TABLE media_slot ADD COLUMN file TEXT;
ALTER TABLE media_slot ADD COLUMN file_release_id TEXT;
ALTER TABLE media_episode ADD COLUMN file_release_id TEXT;
ALTER TABLE organization ADD COLUMN replaces BIGINT NOT NULL DEFAULT 0;
