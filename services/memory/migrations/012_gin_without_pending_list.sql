-- Every search reads these full-text indexes. With GIN's fast update (its default), new entries
-- wait in a pending list that every search scans whole until VACUUM, or a list grown past 4 MB,
-- merges it (and the insert that finds it full merges all of it, for that turn's user to wait
-- on). After 1,000 turns that list was 450 pages, 4 ms of a 6 ms message search. Entries now go
-- straight into the index: about 0.1 ms more per message stored, for searches that never scan
-- a list.
ALTER INDEX memory.messages_search SET (fastupdate = off);
ALTER INDEX memory.facts_search SET (fastupdate = off);
ALTER INDEX memory.summaries_search SET (fastupdate = off);
ALTER INDEX memory.document_chunks_search SET (fastupdate = off);
ALTER INDEX memory.files_search SET (fastupdate = off);
-- What is pending already is merged now; the setting only stops the list growing.
SELECT gin_clean_pending_list(index_name::regclass)
FROM unnest(ARRAY['memory.messages_search', 'memory.facts_search', 'memory.summaries_search',
  'memory.document_chunks_search', 'memory.files_search']) AS index_name;
