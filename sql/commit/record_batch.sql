-- The batch's ledger row; its CHECK enforces input = the sum of the eight outcomes
-- (docs/rules.md rule 8), so a miscount aborts the batch instead of being written.
-- committed_at is this statement's time, just before the COMMIT: the transaction's own now()
-- can be earlier than the batch before's commit (a batch staged ahead begins during it).
-- $1 pipeline, $2 run_id, $3 batch_no, $4 source, $5 start_position, $6 end_position,
-- $7 input, $8..$15 inserted, updated, unchanged, stale, superseded, duplicate, invalid, conflict
INSERT INTO batch_ledger (pipeline, run_id, batch_no, source, start_position, end_position, input,
                          inserted, updated, unchanged, stale, superseded, duplicate, invalid, conflict,
                          committed_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, statement_timestamp())
