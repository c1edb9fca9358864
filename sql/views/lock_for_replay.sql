-- Taken first by each transaction of a rebuild's replay: the rows of view $1's receiving
-- versions FOR UPDATE, in version order. A live apply holds them FOR SHARE from its first
-- statement (receiving_versions.sql), so the replay and the relay's applies to the view take
-- turns, whole transaction against whole transaction, and never deadlock on the rows both
-- write (an inbox entry, a transaction's record, a day): under load such deadlocks could
-- roll a replay back until its retries ran out and the rebuild failed.
SELECT version FROM views WHERE name = $1 AND status <> 'retired' ORDER BY version FOR UPDATE
