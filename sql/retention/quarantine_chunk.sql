-- One chunk of quarantine retention: of the next $3 entries by primary key from id $1 on,
-- those released more than $2 milliseconds ago are deleted (an open entry is never deleted).
-- Returns the chunk's last id, how many it deleted, and whether any entry was created before
-- the window (released_at >= created_at: past a chunk with none, nothing older follows).
WITH chunk AS (
  SELECT id, released_at, created_at FROM quarantine WHERE id >= $1 ORDER BY id LIMIT $3
), deleted AS (
  DELETE FROM quarantine q USING chunk c
   WHERE q.id = c.id AND c.released_at < now() - $2::bigint * interval '1 millisecond'
  RETURNING q.id
)
SELECT (SELECT max(id) FROM chunk) AS last_id,
       (SELECT count(*) FROM deleted) AS deleted,
       COALESCE((SELECT bool_or(created_at < now() - $2::bigint * interval '1 millisecond') FROM chunk), false) AS any_older
