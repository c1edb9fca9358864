-- The snapshot a rebuild fills its table from, recorded as the version's position: the
-- catch-up replays only what that snapshot does not reflect.
SELECT pg_current_snapshot()::text AS snapshot
