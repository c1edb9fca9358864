-- Committed with the run it maps to (or with the queued follow-up it joined).
INSERT INTO run_requests (request_id, run_id, pipeline) VALUES ($1, $2, $3)
