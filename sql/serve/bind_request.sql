-- A webhook-id sent to a path with no pipeline: bound to that path (no run), unless an
-- earlier request bound it already. Returns the pipeline it is bound to.
WITH inserted AS (
  INSERT INTO run_requests (request_id, pipeline) VALUES ($1, $2)
  ON CONFLICT (request_id) DO NOTHING
  RETURNING pipeline
)
SELECT pipeline FROM inserted
UNION ALL
SELECT pipeline FROM run_requests WHERE request_id = $1
LIMIT 1
