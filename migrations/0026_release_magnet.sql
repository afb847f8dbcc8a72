-- A release keeps the indexer's magnet link beside its download link, so a
-- submit can hand the client the link the indexer gave (trackers kept)
-- rather than a magnet rebuilt from the infohash alone.
ALTER TABLE source_release ADD COLUMN magnet_url TEXT;
