-- tidemark serve. Every webhook-id that asked for a run, with the run it got:
-- requests that arrive while a pipeline runs coalesce into one follow-up run, so
-- runs.request_id (the first request's id) alone cannot make each of them idempotent.
CREATE TABLE run_requests (
  request_id  text PRIMARY KEY,
  run_id      bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  received_at timestamptz NOT NULL DEFAULT now()
);

-- GET /v1/pipelines shows each pipeline's latest run; GET /v1/runs/{id} sums its ledger rows.
CREATE INDEX runs_pipeline_latest ON runs (pipeline, id DESC);
CREATE INDEX batch_ledger_run ON batch_ledger (run_id);
