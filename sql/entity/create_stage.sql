-- A declared entity's staging table (as commit/create_stage.sql for the built-in one): the
-- commit step COPYs each batch's versions into it; ON COMMIT DELETE ROWS empties it at the
-- end of every batch transaction. Filled in by pipeline/store/entity_sql.cpp: <stage>
-- (tidemark_stage_<entity>), <key>, <revision>, <columns> as for create_table.sql.
-- Its own columns carry the tidemark_ prefix, which no declared field may take.
CREATE TEMP TABLE IF NOT EXISTS {{stage}} (
  tidemark_ord int NOT NULL,          -- the version's index in the batch plan
  {{key}} text NOT NULL,
  {{revision}} bigint NOT NULL{{columns}},
  tidemark_candidate boolean NOT NULL  -- the highest revision of its key in the batch
) ON COMMIT DELETE ROWS
