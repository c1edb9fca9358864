-- A worker that stops cleanly frees its partitions and leaves, so that the others take them at
-- their next balance instead of after the owner timeout. $1 pipeline, $2 worker id
WITH freed AS (
  UPDATE tidemark_partitions SET owner = NULL, lease_until = NULL
   WHERE pipeline = $1 AND owner = $2
)
DELETE FROM tidemark_workers WHERE id = $2
