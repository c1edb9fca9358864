-- Quarantine each rejected record once: a replay of the same source finds its entries
-- already there (unique index quarantine_once) and adds none.
INSERT INTO quarantine (pipeline, source, reason, detail, transaction_id, source_revision, raw, raw_bytes, format,
                        decode_context, position, run_id, entity, field)
SELECT pipeline, source, reason, detail, transaction_id, source_revision, raw, raw_bytes, format,
       decode_context, position, run_id, entity, field
  FROM tidemark_quarantine_stage
 ORDER BY ord
ON CONFLICT DO NOTHING
