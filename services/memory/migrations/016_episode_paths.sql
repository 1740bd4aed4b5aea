-- The weekly roll-up asks which users have episode files (episodes/YYYY-MM-DD/…) in a week,
-- across all users: this index reads that week's paths alone, not the whole files table. Paths
-- compare byte by byte (COLLATE "C"), as the roll-up's range does, whatever the database's locale.
CREATE INDEX files_live_episode_paths ON memory.files (path COLLATE "C", user_id)
  WHERE deleted_at IS NULL AND starts_with(path, 'episodes/');
