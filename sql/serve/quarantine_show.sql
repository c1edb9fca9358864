-- GET /v1/quarantine/{id}: one entry with its whole raw record, released or not.
SELECT row_to_json(q)::text
FROM (
  SELECT id, pipeline, reason, detail, transaction_id, source_revision, position, run_id, created_at,
         released_at, released_by, release_outcome, raw
  FROM quarantine
  WHERE id = $1
) q
