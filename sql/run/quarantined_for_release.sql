-- Quarantine entry $1 as release needs it: the exact bytes received (raw_bytes when raw could
-- not hold them, else raw), how to decode them, and whether it was released already (a
-- record is released once, and by which run), its position and source, which the released
-- record keeps, and the entity it was quarantined as, which the release must validate it as.
SELECT pipeline, COALESCE(raw_bytes, convert_to(raw, 'UTF8')) AS raw, format, decode_context, released_at,
       release_outcome, position, entity, release_run_id, source
  FROM quarantine WHERE id = $1
