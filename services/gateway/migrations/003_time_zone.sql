-- The user's IANA zone, which schedules default to and reminders are told in. NULL until the user
-- sets it or a chat names one first; until then the zone is UTC.
ALTER TABLE gateway.users ADD COLUMN time_zone text;
