-- Checkpoint last, in the batch's transaction (DESIGN rule 7). It never moves backwards:
-- a replay re-reads the source from its start without undoing progress.
-- $1 pipeline, $2 source, $3 position text, $4 file, $5 byte offset, $6 run_id
INSERT INTO checkpoint AS cp (pipeline, source, position, file, byte_offset, run_id)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (pipeline, source) DO UPDATE
   SET position = EXCLUDED.position, file = EXCLUDED.file, byte_offset = EXCLUDED.byte_offset,
       run_id = EXCLUDED.run_id, updated_at = now()
 WHERE (EXCLUDED.file COLLATE "C", EXCLUDED.byte_offset) > (cp.file COLLATE "C", cp.byte_offset)
