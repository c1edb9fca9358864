-- `tidemark quarantine show`: every field of entry $1, printed under its column name, the
-- claimed key and revision (transaction_id and source_revision, for every entity) as `key`
-- and `revision`. The entity and the key find the stored row shown beside it.
SELECT id, pipeline, entity, reason, field, detail, transaction_id AS key, source_revision AS revision, position, format, run_id, created_at, released_at, released_by, release_outcome, raw FROM quarantine WHERE id = $1
