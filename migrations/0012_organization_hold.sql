-- The call carrying out an organization holds it: who holds it and until
-- when. The holder renews the hold while its call runs, so a process that
-- died lets go once its hold runs out (docs/domain.md).
ALTER TABLE organization ADD COLUMN holder TEXT;
ALTER TABLE organization ADD COLUMN held_until BIGINT;
