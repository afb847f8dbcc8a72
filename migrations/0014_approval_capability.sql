-- An approval names the capability it authorises, so one capability cannot
-- consume an approval given for another that acts on the same plan. Earlier
-- approvals were given for the built-in that acts on their plan type.
ALTER TABLE approval ADD COLUMN capability_id TEXT NOT NULL DEFAULT '';
UPDATE approval SET capability_id = 'download.submit' WHERE plan_type = 'acquisition';
UPDATE approval SET capability_id = 'organize.execute' WHERE plan_type = 'organization';
