-- The relay's claim, costed by the events it handles whatever the planner's statistics
-- (docs/performance.md "The relay on the change log (migration 0032)"). Two steps cost more:
--
-- - The lock of the delivered events' cursors joined each event's destination and its change
--   separately to the cursor. When tidemark_cursor was analyzed before it had rows (a new
--   destination's cursors are all written after the ANALYZE that follows a load), the planner,
--   seeing no cost difference, probed the cursor's key by its second column alone (the
--   partition key): a walk of the whole index per event. The events are now one relation, and
--   each cursor is probed by its whole key. (The marks and renewals join the same way but
--   update the cursor, and were planned by the whole key: left as they are.)
-- - Every call read the log for new changes, even when none had been written since the last
--   read, and wrote the destination's snapshot forward because the relay's own transactions
--   had moved the server's. An index probe now says whether anything was logged since; if not,
--   the read and its write are skipped.

-- Locks the cursors of the events p_ids (outbox ids) that are their keys' heads, in key
-- order, waiting for them (as in 0029_change_log.sql), each probed by its whole key.
CREATE OR REPLACE FUNCTION tidemark_lock_cursors(p_ids bigint[]) RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan SET jit = off
AS $$
BEGIN
  -- OFFSET 0: the events are one relation, so each cursor is probed by its whole key.
  PERFORM 1
     FROM (SELECT e.destination, e.partition_key FROM tidemark_outbox_events(p_ids, NULL) e OFFSET 0) e
     JOIN tidemark_cursor k ON k.destination = e.destination AND k.partition_key = e.partition_key
    ORDER BY k.destination, k.partition_key
      FOR UPDATE OF k;
END
$$;

-- The read of new changes for p_destination, as 0029_change_log.sql defined it, is now
-- tidemark_log_read; tidemark_log_ingest calls it only when something was logged since the
-- destination's snapshot: a transaction of its snapshot's xip list has ended, or a change has
-- an xid from its xmax on (the relay's own transactions move the server's snapshot but log
-- nothing). Otherwise the snapshot stays, which writes nothing. A change this probe cannot
-- see (its transaction is running) is read by a later call, from the same snapshot.
ALTER FUNCTION tidemark_log_ingest(text) RENAME TO tidemark_log_read;

CREATE FUNCTION tidemark_log_ingest(p_destination text) RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan SET jit = off
AS $$
DECLARE
  v_old pg_snapshot;
BEGIN
  SELECT t.ingested INTO v_old FROM tidemark_destination t WHERE t.name = p_destination;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_snapshot_xip(v_old) AS x WHERE pg_visible_in_snapshot(x, pg_current_snapshot()))
     OR EXISTS (SELECT 1 FROM tidemark_change c WHERE c.xid >= pg_snapshot_xmax(v_old)) THEN
    PERFORM tidemark_log_read(p_destination);
  END IF;
END
$$;
