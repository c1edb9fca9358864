-- Every event of destination $1 still in the outbox, whatever its status: a rebuild from
-- full history replays them through the new version's inbox.
SELECT id, idempotency_key, partition_key, sequence, payload::text
  FROM outbox
 WHERE destination = $1
 ORDER BY id
