-- serve consumes a nats pipeline's partitions continuously, each run started because
-- its stream holds new messages rather than by the CLI, a schedule or a webhook. runs.trigger
-- says so: 'stream'.
ALTER TABLE runs DROP CONSTRAINT runs_trigger_check;
ALTER TABLE runs ADD CONSTRAINT runs_trigger_check CHECK (trigger IN ('cli', 'schedule', 'webhook', 'stream'));
