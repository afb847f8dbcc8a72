-- When the sweep last searched the indexers for a slot directly, and that
-- day (YYYY-MM-DD, UTC): a slot is searched when it is new, when one of
-- its episodes has aired since, or when someone asks; the indexers' feeds
-- cover it the rest of the time.
ALTER TABLE media_slot ADD COLUMN searched_at BIGINT;
ALTER TABLE media_slot ADD COLUMN searched_on TEXT;
