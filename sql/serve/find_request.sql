-- What a webhook-id already got: the pipeline whose path first saw it and, unless that path
-- had no pipeline, its run. A repeated request returns the run and starts nothing.
SELECT q.pipeline, r.id, r.status
FROM run_requests q
LEFT JOIN runs r ON r.id = q.run_id
WHERE q.request_id = $1
