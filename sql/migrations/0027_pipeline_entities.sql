-- A pipeline keeps its entity (docs/entities.md "A pipeline keeps its
-- entity"): the entity a pipeline loads, recorded by its first run. A command that would load,
-- release or show its records as another entity is refused (exit 2) instead of treating them
-- as that entity; `tidemark pipeline set-entity` changes it on purpose. A pipeline that ran
-- before this migration records its entity at its next run.
CREATE TABLE tidemark_pipeline_entities (
  pipeline   text PRIMARY KEY,
  entity     text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
