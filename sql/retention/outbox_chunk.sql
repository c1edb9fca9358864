-- One chunk of outbox retention: the next $3 rows by primary key from id $1 on; of those, the
-- delivered ones delivered more than $2 milliseconds ago are deleted, unless a version of the
-- view the row's destination feeds is being built (a rebuild replays that destination).
-- Returns the chunk's last id, how many it deleted, and whether any of its rows was created
-- before the window (once none was, the rows after it are newer still: the caller stops).
-- Each destination's deleted rows are counted in tidemark_outbox_trimmed.
WITH chunk AS (
  SELECT id, destination, status, delivered_at, created_at
    FROM outbox WHERE id >= $1 ORDER BY id LIMIT $3
), deleted AS (
  DELETE FROM outbox o USING chunk c
   WHERE o.id = c.id
     AND c.status = 'delivered'
     AND c.delivered_at < now() - $2::bigint * interval '1 millisecond'
     AND NOT EXISTS (SELECT 1 FROM views v WHERE v.name = c.destination AND v.status NOT IN ('live', 'retired'))
  RETURNING o.id, o.destination, o.delivered_at
), trimmed AS (
  -- What a rebuild from full history would now miss (views rebuild refuses one).
  INSERT INTO tidemark_outbox_trimmed AS t (destination, deleted_rows, newest_deleted_at)
  SELECT destination, count(*), max(delivered_at) FROM deleted GROUP BY destination ORDER BY destination
  ON CONFLICT (destination) DO UPDATE
     SET deleted_rows = t.deleted_rows + EXCLUDED.deleted_rows,
         newest_deleted_at = GREATEST(t.newest_deleted_at, EXCLUDED.newest_deleted_at)
)
SELECT (SELECT max(id) FROM chunk) AS last_id,
       (SELECT count(*) FROM deleted) AS deleted,
       COALESCE((SELECT bool_or(created_at < now() - $2::bigint * interval '1 millisecond') FROM chunk), false) AS any_older
