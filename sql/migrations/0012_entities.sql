-- Entities (docs/entities.md): every declared entity's declaration,
-- recorded when its table is created or adopted (pipeline/store/entity_schema.cpp). A table
-- listed here is one Tidemark manages: later declarations may add columns to it, never change
-- one, and no other entity may take it.
CREATE TABLE tidemark_entities (
  name       text PRIMARY KEY,
  table_name text NOT NULL UNIQUE,
  definition jsonb NOT NULL,  -- the declaration as last applied: table, key, revision, fields
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Quarantine entries name their entity and the field at fault. The defaults keep every
-- existing row and insert (the built-in entity's) as they were; transaction_id and
-- source_revision hold the claimed key and revision for every entity.
ALTER TABLE quarantine
  ADD COLUMN entity text NOT NULL DEFAULT 'transaction',
  ADD COLUMN field text;
