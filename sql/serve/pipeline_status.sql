-- GET /v1/pipelines: one pipeline's latest run and checkpoints.
SELECT json_build_object(
  'last_run', (SELECT json_build_object('run_id', id, 'trigger', trigger, 'mode', mode, 'status', status,
                                        'requested_at', requested_at, 'finished_at', finished_at)
               FROM runs WHERE pipeline = $1 ORDER BY id DESC LIMIT 1),
  'checkpoints', (SELECT COALESCE(json_agg(json_build_object('source', source, 'position', position,
                                                             'updated_at', updated_at) ORDER BY source), '[]')
                  FROM checkpoint WHERE pipeline = $1)
)::text AS document
