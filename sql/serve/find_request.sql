-- The run a webhook-id already got: a repeated request returns it and starts nothing.
SELECT r.id, r.status
FROM run_requests q
JOIN runs r ON r.id = q.run_id
WHERE q.request_id = $1
