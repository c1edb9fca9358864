-- After a connection loss during COMMIT the outcome is unknown: the ledger row of the
-- batch says whether it committed, so the batch is never blindly applied twice.
-- $1 run_id, $2 batch_no
SELECT inserted, updated, unchanged, stale, superseded, duplicate, invalid, conflict
  FROM batch_ledger
 WHERE run_id = $1 AND batch_no = $2
