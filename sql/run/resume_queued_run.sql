-- Starts run $1, queued earlier by serve: the run row already exists.
UPDATE runs SET status = 'running', started_at = now() WHERE id = $1
