-- Retention of the change log (docs/retention.md), decided in one place for the chunks that
-- delete (sql/retention/outbox_chunk.sql) and the dry run that counts (dry_run.sql).
--
-- Whether no destination needs change p_change any more: for every destination it feeds,
--   - the cursor of its key is past it (`through` >= its key_sequence: delivered or given up),
--   - no dead letter holds it: a dead event waits for `outbox retry`, and a revived one for its
--     delivery, as dead and pending outbox rows were never deleted,
--   - and no version of the view of that name is being built: the rebuild replays the
--     destination's events from the log.
-- The age (created_at against retention.outbox) is the caller's. Each look is by primary key
-- (tidemark_cursor, tidemark_dead_letter, views), so a chunk costs its own rows, not the log.
CREATE FUNCTION tidemark_change_retired(p_change tidemark_change) RETURNS boolean
LANGUAGE sql STABLE
AS $$
  SELECT NOT EXISTS (
    SELECT 1
      FROM unnest(p_change.destinations) AS d(name)
     WHERE NOT EXISTS (SELECT 1 FROM tidemark_cursor k
                        WHERE k.destination = d.name AND k.partition_key = p_change.partition_key
                          AND k.through >= p_change.key_sequence)
        OR EXISTS (SELECT 1 FROM tidemark_dead_letter l
                    WHERE l.destination = d.name AND l.position = p_change.position)
        OR EXISTS (SELECT 1 FROM views v WHERE v.name = d.name AND v.status NOT IN ('live', 'retired')))
$$;
