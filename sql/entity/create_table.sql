-- A declared entity's table (docs/entities.md "The table"), filled in by
-- pipeline/store/entity_sql.cpp from the declaration with quoted identifiers:
-- <table>, <key>, <revision>, and <columns> (",\n  "field" type" per field, then
-- "extra" jsonb under extra_fields: keep). Field columns are nullable: `required` is
-- enforced by validation, so removing a required field never breaks a later load.
CREATE TABLE {{table}} (
  {{key}} text PRIMARY KEY,
  {{revision}} bigint NOT NULL{{columns}},
  tidemark_pipeline text,
  tidemark_updated_at timestamptz
)
