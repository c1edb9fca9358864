-- One open quarantine entry per record, and the run that released an entry.
--
-- A release that rejected its record again gave the new entry the source 'quarantine', so a
-- replay of the record's source found no open entry of that source and added one: two open
-- entries of one record at one position. A new entry now keeps the source of the entry it
-- replaces; entries made the old way take theirs back from the entry their chain started at
-- (the oldest entry of the record read from its source). The old index goes first: with
-- their sources back, two open entries of one record collide in it until one is closed.
DROP INDEX quarantine_once;
UPDATE quarantine q
   SET source = o.source
  FROM (SELECT DISTINCT ON (pipeline, position, md5(raw)) pipeline, position, md5(raw) AS raw_md5, source
          FROM quarantine
         WHERE source <> 'quarantine'
         ORDER BY pipeline, position, md5(raw), id) o
 WHERE q.source = 'quarantine'
   AND o.pipeline = q.pipeline AND o.position = q.position AND o.raw_md5 = md5(q.raw);

-- The record is what identifies an entry, not the reason it was rejected for: a record
-- released and rejected for another reason, then replayed, is still one record. Where there
-- are several open entries of one record, the newest (the latest validation) stays open; the
-- others are closed, saying which entry stays.
UPDATE quarantine q
   SET released_at = now(), released_by = 'migration 0026 (entry ' || d.newest || ' is this record''s open entry)',
       release_outcome = 'duplicate'
  FROM (SELECT id, max(id) OVER (PARTITION BY pipeline, source, position, md5(raw)) AS newest
          FROM quarantine
         WHERE released_at IS NULL) d
 WHERE q.id = d.id AND d.id <> d.newest;

CREATE UNIQUE INDEX quarantine_once ON quarantine (pipeline, source, position, md5(raw))
 WHERE released_at IS NULL;

-- The run that released the entry: a second release of it is refused naming that run.
-- Releases before this migration are found by their runs' reason, as the release wrote it.
ALTER TABLE quarantine ADD COLUMN release_run_id bigint;
UPDATE quarantine q
   SET release_run_id = r.run_id
  FROM (SELECT substr(reason, 20)::bigint AS entry, max(id) AS run_id
          FROM runs
         WHERE reason ~ '^quarantine release [0-9]{1,18}$' AND status = 'succeeded'
         GROUP BY 1) r
 WHERE q.id = r.entry AND q.released_at IS NOT NULL;
