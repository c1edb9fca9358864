-- GET /v1/quarantine/{id}: one entry with its whole raw record, released or not. The entity
-- and the claimed key (transaction_id, for every entity) find the stored row shown beside it.
SELECT row_to_json(q)::text AS document
FROM (
  SELECT id, pipeline, entity, reason, field, detail, transaction_id, source_revision, position, run_id, created_at,
         released_at, released_by, release_outcome, raw
  FROM quarantine
  WHERE id = $1
) q
