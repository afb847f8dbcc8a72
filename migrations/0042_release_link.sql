-- A release listed without an infohash (a tracker's RSS feed often gives
-- only its .torrent link) is known again by its indexer and link, so each
-- feed read does not record it anew: the lookup record_release makes
-- before inserting one.
CREATE INDEX source_release_link ON source_release (indexer, download_url);
