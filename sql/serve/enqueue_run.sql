-- A run the API or the scheduler asked for; run_pipeline marks it running, then finished.
INSERT INTO runs (pipeline, trigger, mode, status, request_id, reason)
VALUES ($1, $2, $3, 'queued', $4, $5)
RETURNING id
