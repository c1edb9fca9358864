-- One chunk of the registry of files read, under retention.runs: up to $2 rows of the registry of files read whose file
-- no run has found in its folder for more than $1 milliseconds (files that are gone: a run
-- marks the files it finds, sql/files/seen.sql). Should such a file come back, it is read
-- from its start again, which the revision filter makes safe. Returns how many were deleted.
WITH chunk AS (
  SELECT pipeline, source, file FROM tidemark_source_files
   WHERE seen_at < now() - $1::bigint * interval '1 millisecond'
   LIMIT $2
)
DELETE FROM tidemark_source_files f USING chunk c
 WHERE f.pipeline = c.pipeline AND f.source = c.source AND f.file = c.file
