-- One chunk of the change log's retention: the next $3 changes by position from $1 on; of
-- those, the ones created more than $2 milliseconds ago that no destination needs any more
-- (tidemark_change_retired, migration 0030: every cursor past them, no dead letter, no view
-- of theirs being built) are deleted.
-- Returns the chunk's last position, how many changes it deleted, and whether any of them was
-- created before the window (once none was, the changes after it are newer still: the caller
-- stops). Each destination's deleted events are counted in tidemark_outbox_trimmed, with the
-- time its cursor of the key last advanced (when the `outbox` view says they were delivered).
WITH chunk AS (
  SELECT position, created_at FROM tidemark_change WHERE position >= $1 ORDER BY position LIMIT $3
), deleted AS (
  DELETE FROM tidemark_change c USING chunk
   WHERE c.position = chunk.position
     AND chunk.created_at < now() - $2::bigint * interval '1 millisecond'
     AND tidemark_change_retired(c)
  RETURNING c.partition_key, c.destinations
), trimmed AS (
  -- What a rebuild from full history would now miss (views rebuild refuses one).
  INSERT INTO tidemark_outbox_trimmed AS t (destination, deleted_rows, newest_deleted_at)
  SELECT d.name, count(*), max(k.advanced_at)
    FROM deleted
   CROSS JOIN unnest(deleted.destinations) AS d(name)
    JOIN tidemark_cursor k ON k.destination = d.name AND k.partition_key = deleted.partition_key
   GROUP BY d.name
   ORDER BY d.name
  ON CONFLICT (destination) DO UPDATE
     SET deleted_rows = t.deleted_rows + EXCLUDED.deleted_rows,
         newest_deleted_at = GREATEST(t.newest_deleted_at, EXCLUDED.newest_deleted_at)
)
SELECT (SELECT max(position) FROM chunk) AS last_id,
       (SELECT count(*) FROM deleted) AS deleted,
       COALESCE((SELECT bool_or(created_at < now() - $2::bigint * interval '1 millisecond') FROM chunk), false) AS any_older
