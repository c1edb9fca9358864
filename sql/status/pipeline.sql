-- `tidemark status` and GET /v1/pipelines/{name}: pipeline $1's checkpoints, each with its
-- age (milliseconds since it last moved), and how many of its quarantined records are not
-- released yet, and how many files its registry of files read holds (docs/sources.md).
SELECT json_build_object(
  'checkpoints', (SELECT COALESCE(json_agg(json_build_object(
                           'source', source, 'position', position, 'run_id', run_id, 'updated_at', updated_at,
                           'age_ms', (extract(epoch FROM now() - updated_at) * 1000)::bigint) ORDER BY source), '[]')
                  FROM checkpoint WHERE pipeline = $1),
  'open_quarantine', (SELECT count(*) FROM quarantine WHERE pipeline = $1 AND released_at IS NULL),
  'files_read', (SELECT count(*) FROM tidemark_source_files WHERE pipeline = $1)
)::text AS document
