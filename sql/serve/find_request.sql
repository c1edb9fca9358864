-- What a webhook-id already got: the pipeline whose path first saw it and, unless that path
-- had no pipeline, its run. A repeated request returns the run and starts nothing. Past
-- retention.requests the id is still on the run it started (runs.request_id), if that run
-- is kept: then that run answers.
SELECT q.pipeline, r.id AS run_id, r.status
FROM run_requests q
LEFT JOIN runs r ON r.id = q.run_id
WHERE q.request_id = $1
UNION ALL
SELECT r.pipeline, r.id, r.status
FROM runs r
WHERE r.request_id = $1 AND NOT EXISTS (SELECT 1 FROM run_requests WHERE request_id = $1)
