-- Checkpoint last, in the batch's transaction (docs/rules.md rule 7). It never moves backwards: the
-- committer writes it only when the source orders $3 after the stored position it read with
-- commit/lock_checkpoint.sql (a replay re-reads the source from its start without undoing
-- progress). The position is the source's opaque text. updated_at is this statement's time, as
-- the ledger's committed_at (commit/record_batch.sql).
-- $1 pipeline, $2 source, $3 position, $4 run_id
INSERT INTO checkpoint AS cp (pipeline, source, position, run_id, updated_at)
VALUES ($1, $2, $3, $4, statement_timestamp())
ON CONFLICT (pipeline, source) DO UPDATE
   SET position = EXCLUDED.position, run_id = EXCLUDED.run_id, updated_at = EXCLUDED.updated_at
