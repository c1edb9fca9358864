-- Sequences per (destination, partition key) (docs/rules.md rule 12): a pipeline that does not
-- feed a destination never takes one of its numbers, so each destination's stream is
-- contiguous and a consumer waiting for n-1 never waits for ever. The counters replace the
-- per-account ones that all destinations shared. Each starts at the key's highest number
-- so far, so no number is ever handed out twice; gaps the shared counter left stay, and
-- `tidemark views list` shows the views they stall (rebuild those).
CREATE TABLE tidemark_destination_sequence (
  destination   text NOT NULL,
  partition_key text NOT NULL,
  last_sequence bigint NOT NULL,
  PRIMARY KEY (destination, partition_key)
);

INSERT INTO tidemark_destination_sequence (destination, partition_key, last_sequence)
SELECT o.destination, s.partition_key, s.last_sequence
  FROM account_sequence s
  JOIN (SELECT DISTINCT destination, partition_key FROM outbox) o USING (partition_key);

DROP TABLE account_sequence;

-- Raised by commit/apply_batch.sql when another transaction wrote one of the batch's keys
-- after the statement's snapshot: the verdicts read from that snapshot would be wrong, so
-- the batch is rolled back and retried as a serialization failure (SQLSTATE 40001).
CREATE FUNCTION tidemark_concurrent_write(keys bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'another transaction wrote % of this batch''s keys after the batch read them; retrying the batch', keys
    USING ERRCODE = '40001';
END
$$;
