-- GET /v1/quarantine: unreleased entries after id $3, oldest first; $1 = '' for every
-- pipeline. `raw` is cut to its first 4096 characters here (the API cuts that to 4 KiB), so
-- that a page of 15 MiB records is never read whole; raw_size is the record's full size.
SELECT q.id, row_to_json(q)::text AS document, octet_length(full_raw.raw) AS raw_length
FROM (
  SELECT id, pipeline, reason, detail, transaction_id, source_revision, position, run_id, created_at,
         left(raw, 4096) AS raw
  FROM quarantine
  WHERE ($1 = '' OR pipeline = $1) AND released_at IS NULL AND id > $3
  ORDER BY id
  LIMIT $2
) q
JOIN quarantine full_raw ON full_raw.id = q.id
ORDER BY q.id
