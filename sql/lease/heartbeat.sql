-- A worker's heartbeat: it is alive now. A worker that was taken for dead and resumes is alive
-- again, but its partitions have new epochs: it must take partitions anew (lease/balance.sql).
-- $1 worker id, $2 pipeline
INSERT INTO tidemark_workers (id, pipeline) VALUES ($1, $2)
ON CONFLICT (id) DO UPDATE SET seen_at = now()
