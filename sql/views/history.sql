-- Every event of destination $1 still in the log, whatever its status: a rebuild from full
-- history replays them through the new version's inbox (numbered in one pass:
-- tidemark_destination_history, migrations/0031_destination_history.sql).
SELECT id, idempotency_key, partition_key, sequence, payload::text
  FROM tidemark_destination_history($1)
 ORDER BY id
