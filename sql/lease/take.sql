-- Takes free partitions, and those of dead workers (tidemark_worker_alive, migration 0019),
-- up to the worker's fair share, ceil(partitions / live workers), bumping each one's epoch so
-- that its previous owner's batches fail their check (lease/fence.sql). SKIP LOCKED passes over
-- a partition whose row a batch holds: its owner is committing, or is a dead worker's session
-- that lease/end_dead_workers.sql has just signalled; the next balance takes it. Live owners'
-- partitions are never taken: they give up their surplus themselves (lease/release_surplus.sql).
-- Returns the partitions taken. $1 pipeline, $2 partitions, $3 worker id, $4 owner timeout (ms)
WITH live AS (
  SELECT id FROM tidemark_workers WHERE pipeline = $1 AND tidemark_worker_alive(id, $4)
),
wanted AS (
  SELECT GREATEST(ceil($2::numeric / GREATEST((SELECT count(*) FROM live), 1))
                  - (SELECT count(*) FROM tidemark_partitions
                      WHERE pipeline = $1 AND owner = $3 AND partition < $2), 0) AS n
),
candidates AS (
  SELECT partition FROM tidemark_partitions
   WHERE pipeline = $1 AND partition < $2
     AND (owner IS NULL OR owner NOT IN (SELECT id FROM live))
   ORDER BY partition
   LIMIT (SELECT n FROM wanted)
   FOR UPDATE SKIP LOCKED
)
UPDATE tidemark_partitions p
   SET owner = $3, epoch = p.epoch + 1,
       lease_until = now() + make_interval(secs => $4::bigint / 1000.0)
  FROM candidates c
 WHERE p.pipeline = $1 AND p.partition = c.partition
RETURNING p.partition, p.epoch
