-- Records entity $1's declaration: its table $2 and definition $3 (jsonb text). Run under the
-- migration lock once the table matches the declaration (pipeline/store/entity_schema.cpp).
INSERT INTO tidemark_entities (name, table_name, definition)
VALUES ($1, $2, $3::jsonb)
ON CONFLICT (name) DO UPDATE
   SET table_name = EXCLUDED.table_name,
       definition = EXCLUDED.definition,
       updated_at = now()
 WHERE (tidemark_entities.table_name, tidemark_entities.definition)
       IS DISTINCT FROM (EXCLUDED.table_name, EXCLUDED.definition)
