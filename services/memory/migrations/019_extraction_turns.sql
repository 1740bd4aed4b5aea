-- What Jarvis learned, per turn: the Learned view lists extractions by turn, and a wrong change
-- can be undone once. Rows written before this migration have no turn (NULL): they are listed
-- under their run alone. The command path ("remember this") and the remember tool also write
-- rows, so a turn can have more than one.
ALTER TABLE memory.extractions ADD COLUMN turn_id uuid;
-- Set when the user undid the extraction's changes; a second undo is refused.
ALTER TABLE memory.extractions ADD COLUMN undone_at timestamptz;
