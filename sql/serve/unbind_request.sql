-- A webhook-id bound to this pipeline's path while the config had no such pipeline: the
-- pipeline exists now, so the id asks for a run like a new one.
DELETE FROM run_requests WHERE request_id = $1 AND pipeline = $2 AND run_id IS NULL
