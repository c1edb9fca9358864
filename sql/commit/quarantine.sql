-- Quarantine each rejected record once: a record has at most one open entry at its source
-- and position (unique index quarantine_once, migration 0026), so a replay of the same
-- source finds it there, whatever its reason now and however often it was released, and
-- adds none.
INSERT INTO quarantine (pipeline, source, reason, detail, transaction_id, source_revision, raw, raw_bytes, format,
                        decode_context, position, run_id, entity, field)
SELECT pipeline, source, reason, detail, transaction_id, source_revision, raw, raw_bytes, format,
       decode_context, position, run_id, entity, field
  FROM tidemark_quarantine_stage
 ORDER BY ord
ON CONFLICT DO NOTHING
