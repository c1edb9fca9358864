-- The batch's ledger row; its CHECK enforces input = the sum of the eight outcomes
-- (docs/rules.md rule 8), so a miscount aborts the batch instead of being written.
-- $1 pipeline, $2 run_id, $3 batch_no, $4 source, $5 start_position, $6 end_position,
-- $7 input, $8..$15 inserted, updated, unchanged, stale, superseded, duplicate, invalid, conflict
INSERT INTO batch_ledger (pipeline, run_id, batch_no, source, start_position, end_position, input,
                          inserted, updated, unchanged, stale, superseded, duplicate, invalid, conflict)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
