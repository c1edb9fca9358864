-- A run cut short by a graceful stop (serve shutting down) is `stopped`, with its committed
-- batches kept, rather than `succeeded` (docs/api.md: a run's status).
ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check
  CHECK (status IN ('queued', 'running', 'succeeded', 'stopped', 'failed'));
