-- A webhook-id sent to a path with no pipeline: bound to that path (no run), unless an
-- earlier request bound it already. Returns the pipeline it is bound to. (DO UPDATE, not
-- DO NOTHING: it returns the existing row too, also one a concurrent request just committed.)
INSERT INTO run_requests (request_id, pipeline) VALUES ($1, $2)
ON CONFLICT (request_id) DO UPDATE SET request_id = EXCLUDED.request_id
RETURNING pipeline
