-- Records the deliveries $4 ('{1,2,3}') and claims up to $2 due events of the destinations
-- $1 ('{a,b}') for this relay, in one round trip per relay loop. The work is
-- tidemark_relay_claim (migrations/0015_destination_heads.sql):
--   1. the delivered events are marked; marking delivered is not fenced by attempts (a 2xx
--      is true whoever sent it); a row already delivered (or dead) stays as it is. Each
--      delivered head moves on to its key's next pending sequence, so that successor is
--      claimable in this same call;
--   2. per-key order: only a key's head (its lowest pending sequence) may go, so nothing is
--      sent while an earlier event of the key is in flight, waiting for a retry or not yet
--      claimed; dead events do not block. The claim takes the destinations' due heads in
--      due order (FOR UPDATE SKIP LOCKED: relays never wait for each other) and their rows
--      through outbox_partition: an index probe per claimed row, whatever the backlog and
--      the statistics. Claiming is by status, never by an id high-water mark: an id taken
--      early but committed late is still due (docs/rules.md rule 11);
--   3. the claim is a lease: attempts counts this attempt and next_attempt_at (and the
--      head's due time) moves $3 ms ahead, committed before anything is sent, so other
--      relays skip the row while it is in flight and, if this relay dies, it is due again
--      when the lease runs out. attempts doubles as the fencing token of the marks.
SELECT id, destination, idempotency_key, partition_key, sequence, payload, attempts
  FROM tidemark_relay_claim($1::text[], $2::bigint, $3::bigint, $4::bigint[])
