-- The stored checkpoint of pipeline $1 and source $2, locked until the batch's transaction
-- ends, so that the source's comparison with the batch's end still holds when it is written
-- (commit/advance_checkpoint.sql). No row: nothing committed yet.
SELECT position FROM checkpoint WHERE pipeline = $1 AND source = $2 FOR UPDATE
