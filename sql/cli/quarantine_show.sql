-- `tidemark quarantine show`: every field of entry $1, printed under its column name. The
-- entity and the claimed key (transaction_id, for every entity) find the stored row shown
-- beside it.
SELECT id, pipeline, entity, reason, field, detail, transaction_id, source_revision, position, format, run_id, created_at, released_at, released_by, release_outcome, raw FROM quarantine WHERE id = $1
