-- `tidemark pipeline set-entity`: pipeline $1 loads entity $2 from now on (run under the
-- pipeline's lock).
INSERT INTO tidemark_pipeline_entities (pipeline, entity) VALUES ($1, $2)
ON CONFLICT (pipeline) DO UPDATE SET entity = EXCLUDED.entity, updated_at = now()
