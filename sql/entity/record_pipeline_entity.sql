-- A pipeline's first run records the entity it loads ($1 pipeline, $2 entity); a later run
-- finds the row there and compares (pipeline/store/pipeline_entity.cpp). Two first runs at
-- once (a partitioned pipeline's workers): the second waits for the first's row.
INSERT INTO tidemark_pipeline_entities (pipeline, entity) VALUES ($1, $2) ON CONFLICT (pipeline) DO NOTHING
