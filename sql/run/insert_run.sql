-- Starts a run not queued before (the CLI's run): $1 pipeline, $2 trigger, $3 mode
-- ('resume' or 'replay'), $4 the request id if any, $5 why it runs. Returns its id.
INSERT INTO runs (pipeline, trigger, mode, status, request_id, reason, started_at) VALUES ($1, $2, $3, 'running', $4, $5, now()) RETURNING id
