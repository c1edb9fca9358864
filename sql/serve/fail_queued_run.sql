-- A queued run that will not start (serve stopping, or its source could not be opened);
-- a run that did start was already finished by the run controller and is left alone.
UPDATE runs SET status = 'failed', finished_at = now(), error = $2
WHERE id = $1 AND status = 'queued'
