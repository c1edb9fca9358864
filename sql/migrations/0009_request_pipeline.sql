-- A webhook-id belongs to the pipeline whose path first saw it. The signature
-- covers the id, timestamp and body but not the path, so without this a captured request
-- could be replayed to another pipeline. An id first seen on a path with no pipeline (404)
-- is kept too, without a run, so that it cannot be moved to a real one afterwards.
ALTER TABLE run_requests ADD COLUMN pipeline text;
UPDATE run_requests q SET pipeline = r.pipeline FROM runs r WHERE r.id = q.run_id;
ALTER TABLE run_requests ALTER COLUMN pipeline SET NOT NULL, ALTER COLUMN run_id DROP NOT NULL;

-- retention.requests deletes by age.
CREATE INDEX run_requests_received ON run_requests (received_at);
