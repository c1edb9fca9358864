-- Entity $1's declaration as tidemark_entities recorded it when its table was last brought up
-- to date (entity_sql.cpp definition_json): what reading commands know of an entity without
-- the config. The declaration's own fields first, then one row per field in declared order.
SELECT table_name, definition->>'key' AS key, definition->>'revision' AS revision,
       definition->>'partition_by' AS partition_by, definition->>'extra_fields' AS extra_fields
  FROM tidemark_entities WHERE name = $1
