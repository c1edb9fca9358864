-- Checkpoint last, in the batch's transaction (DESIGN rule 7). It never moves backwards:
-- a replay re-reads the source from its start without undoing progress. Files compare by
-- the bytes of their names (file_bytes), the order the source reads them in; `file` is the
-- name escaped into valid text.
-- $1 pipeline, $2 source, $3 position text, $4 file, $5 byte offset, $6 run_id, $7 file name bytes as hex
INSERT INTO checkpoint AS cp (pipeline, source, position, file, file_bytes, byte_offset, run_id)
VALUES ($1, $2, $3, $4, decode($7, 'hex'), $5, $6)
ON CONFLICT (pipeline, source) DO UPDATE
   SET position = EXCLUDED.position, file = EXCLUDED.file, file_bytes = EXCLUDED.file_bytes,
       byte_offset = EXCLUDED.byte_offset, run_id = EXCLUDED.run_id, updated_at = now()
 WHERE (EXCLUDED.file_bytes, EXCLUDED.byte_offset)
       > (COALESCE(cp.file_bytes, convert_to(cp.file, 'UTF8')), cp.byte_offset)
