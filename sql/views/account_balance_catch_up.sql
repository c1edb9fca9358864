-- The events of destination $1 that a new version's snapshot does not reflect, in
-- per-account order: whatever was delivered to the older versions between the snapshot
-- and the moment the new version became visible to the relay (the destination's history
-- numbered in one pass: tidemark_destination_history, migrations/0031_destination_history.sql).
SELECT o.id, o.idempotency_key, o.partition_key, o.sequence, o.payload::text
  FROM tidemark_destination_history($1) o
  LEFT JOIN {table} v ON v.account_id = o.partition_key
 WHERE o.sequence > COALESCE(v.version, 0)
 ORDER BY o.partition_key, o.sequence
