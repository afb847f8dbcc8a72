-- Slots keep the order they were opened in, even within one millisecond:
-- an entity's slots are tried in that order when a release is planned.

ALTER TABLE media_slot ADD COLUMN created_seq BIGINT NOT NULL DEFAULT 0;
UPDATE media_slot SET created_seq = (SELECT COUNT(*) FROM media_slot AS earlier
    WHERE earlier.created_at < media_slot.created_at
       OR (earlier.created_at = media_slot.created_at AND earlier.id <= media_slot.id));
CREATE INDEX media_slot_entity_order ON media_slot (entity_id, created_seq);
