-- The entity pipeline $1 loads, as its first run recorded it (no row: it has not run since
-- pipelines record their entity).
SELECT entity FROM tidemark_pipeline_entities WHERE pipeline = $1
