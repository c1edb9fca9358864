-- Per connection. Index probes are cheap here (the hot part of transaction_state is cached):
-- with PostgreSQL's default random_page_cost the planner hashes the whole table for every
-- batch, and a batch's cost grows with the table; measured in docs/performance.md.
SET random_page_cost = 1.1;

-- Rejected records are COPYed here first, then inserted once (see commit/quarantine.sql).
CREATE TEMP TABLE IF NOT EXISTS tidemark_quarantine_stage (
  ord bigint GENERATED ALWAYS AS IDENTITY,  -- keeps the batch's order
  pipeline text, source text, reason text, detail text, transaction_id text, source_revision bigint,
  raw text, raw_bytes bytea, format text, decode_context text, position text, run_id bigint,
  entity text, field text  -- the entity loaded and the field at fault (NULL: none, or a conflict)
) ON COMMIT DELETE ROWS;
