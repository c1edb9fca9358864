-- Retention of the change log (docs/retention.md), decided in one place for the chunks that
-- delete (sql/retention/outbox_chunk.sql) and the dry run that counts (dry_run.sql).
--
-- Whether no destination needs change p_change any more: for every destination it feeds,
--   - the cursor of its key is past it (`through` >= its key_sequence: delivered or given up),
--   - no dead letter holds it: a dead event waits for `outbox retry`, and a revived one for its
--     delivery, as dead and pending outbox rows were never deleted,
--   - and no version of the view of that name is being built: the rebuild replays the
--     destination's events from the log.
-- The age (created_at against retention.outbox) is the caller's. Each look is by primary key,
-- so a chunk costs its own changes, not the log or the cursors: a SQL function would be
-- planned again at every call (it cannot be inlined) and plans the cursors by their size, a
-- sequential scan per change while they are few; one plan, kept, by index (about 50 µs a change).
CREATE FUNCTION tidemark_change_retired(p_change tidemark_change) RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan SET jit = off
AS $$
BEGIN
  RETURN NOT EXISTS (
    SELECT 1
      FROM unnest(p_change.destinations) AS d(name)
      LEFT JOIN tidemark_cursor k ON k.destination = d.name AND k.partition_key = p_change.partition_key
      LEFT JOIN tidemark_dead_letter l ON l.destination = d.name AND l.position = p_change.position
      LEFT JOIN views v ON v.name = d.name AND v.status NOT IN ('live', 'retired')
     WHERE k.through IS NULL OR k.through < p_change.key_sequence OR l.position IS NOT NULL OR v.name IS NOT NULL);
END
$$;
