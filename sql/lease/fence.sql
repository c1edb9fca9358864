-- The first statement of every batch of a partition: the batch commits only while the worker
-- still owns the partition at the epoch it took it with. 0 rows means another worker has taken
-- it (this one was paused, cut off or too slow): the batch rolls back. The row lock it takes
-- orders the batch against a taker's epoch bump, so a taker that reads the checkpoint after its
-- bump sees every batch the previous owner committed.
-- $1 pipeline, $2 partition, $3 worker id, $4 epoch, $5 owner timeout (ms)
UPDATE tidemark_partitions
   SET lease_until = now() + make_interval(secs => $5::bigint / 1000.0)
 WHERE pipeline = $1 AND partition = $2 AND owner = $3 AND epoch = $4
