-- Gives up the worker's partitions beyond its fair share, ceil(partitions / live workers), the
-- highest numbered first, and any it holds beyond the configured count; a worker that joined
-- takes them at its next balance. Between batches only: a batch of a released partition would
-- fail its epoch check and roll back (lease/fence.sql).
-- $1 pipeline, $2 partitions, $3 worker id, $4 owner timeout (ms)
WITH live AS (
  SELECT count(*) AS workers FROM tidemark_workers WHERE pipeline = $1 AND tidemark_worker_alive(id, $4)
),
kept AS (
  SELECT partition FROM tidemark_partitions
   WHERE pipeline = $1 AND owner = $3 AND partition < $2
   ORDER BY partition
   LIMIT (SELECT ceil($2::numeric / GREATEST(workers, 1)) FROM live)
)
UPDATE tidemark_partitions
   SET owner = NULL, lease_until = NULL
 WHERE pipeline = $1 AND owner = $3 AND partition NOT IN (SELECT partition FROM kept)
