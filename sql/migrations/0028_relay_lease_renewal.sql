-- A relay renews the leases of its attempts in flight. A lease ran out while
-- its attempt was still in flight (a destination that answered slowly, or streamed its body),
-- and the event was claimed and sent again beside it, every lease, with attempts still 1.
-- Now the relay extends each lease it holds while the attempt runs (pipeline/relay/relay.cpp);
-- a relay that dies stops renewing, and its events are due again when their leases run out.
--
-- Renews the leases of the attempts p_attempts of the events p_ids (in the same order) to
-- p_lease_ms from now; returns the ids renewed. Fenced like the marks: a lease is renewed only
-- while the claim of that attempt still holds it and its answer is not recorded. An ordered
-- event must still be its key's head with head_attempts = the attempt and its row still
-- pending with fewer attempts recorded (a mark records the attempt on the row, so a renewal
-- that comes after the answer's mark leaves the retry's due time alone). A row without a key
-- or a sequence keeps its lease on the row: it is renewed while it is pending with that
-- attempt; such a row's retry marked just before a renewal can be put off by one lease (those
-- rows are from before migration 0005). A lease that is not renewed was lost: the relay says so.
CREATE FUNCTION tidemark_relay_renew(p_ids bigint[], p_attempts int[], p_lease_ms bigint) RETURNS SETOF bigint
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan SET jit = off
AS $$
DECLARE
  v_lease_end timestamptz := now() + p_lease_ms * interval '1 millisecond';
BEGIN
  PERFORM set_config('tidemark.outbox_heads', 'kept', true);
  PERFORM tidemark_outbox_lock_heads(p_ids);
  RETURN QUERY
  UPDATE tidemark_destination_sequence h
     SET head_due_at = greatest(h.head_due_at, v_lease_end)
    FROM unnest(p_ids, p_attempts) AS l(id, attempt)
    JOIN outbox o ON o.id = l.id
   WHERE o.status = 'pending' AND o.partition_key IS NOT NULL AND o.sequence IS NOT NULL
     AND o.attempts < l.attempt
     AND h.destination = o.destination AND h.partition_key = o.partition_key
     AND h.head_sequence = o.sequence AND h.head_attempts = l.attempt
  RETURNING o.id;
  RETURN QUERY
  UPDATE outbox o
     SET next_attempt_at = greatest(o.next_attempt_at, v_lease_end)
    FROM unnest(p_ids, p_attempts) AS l(id, attempt)
   WHERE o.id = l.id AND o.status = 'pending' AND (o.partition_key IS NULL OR o.sequence IS NULL)
     AND o.attempts = l.attempt
  RETURNING o.id;
  PERFORM set_config('tidemark.outbox_heads', '', true);
END
$$;
