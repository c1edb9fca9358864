-- GET /v1/quarantine: unreleased entries, oldest first; $1 = '' for every pipeline.
SELECT COALESCE(json_agg(q ORDER BY q.id), '[]')::text
FROM (
  SELECT id, pipeline, reason, detail, transaction_id, source_revision, position, run_id, created_at, raw
  FROM quarantine
  WHERE ($1 = '' OR pipeline = $1) AND released_at IS NULL
  ORDER BY id
  LIMIT $2
) q
