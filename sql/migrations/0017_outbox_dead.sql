-- The batch path pays for every outbox index a new row enters. New rows are
-- pending, so they entered both outbox_partition (the relay's per-key probe) and
-- outbox_undelivered (status and view lag counts of pending and dead events). The counts now
-- read their pending rows through outbox_partition and their dead rows through outbox_dead,
-- which a row enters only when the relay gives up on it: a new row enters one secondary
-- index. The statements that count say `status = 'pending' OR status = 'dead'`, so that the
-- planner can match each arm with its partial index (a BitmapOr).
CREATE INDEX outbox_dead ON outbox (destination) WHERE status = 'dead';
DROP INDEX outbox_undelivered;
