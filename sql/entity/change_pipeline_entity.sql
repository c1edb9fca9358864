-- `tidemark pipeline set-entity`: pipeline $1 loads entity $2 from now on. Returns the entity
-- it loaded before (NULL when none was recorded).
WITH before AS (SELECT entity FROM tidemark_pipeline_entities WHERE pipeline = $1 FOR UPDATE)
INSERT INTO tidemark_pipeline_entities (pipeline, entity) VALUES ($1, $2)
ON CONFLICT (pipeline) DO UPDATE SET entity = EXCLUDED.entity, updated_at = now()
RETURNING (SELECT entity FROM before)
