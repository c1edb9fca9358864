-- `tidemark status`, GET /v1/pipelines/{name} (status/destination_events.sql) and
-- the view lag (views/lag.sql) count a destination's undelivered events. Without this index
-- each of them reads the whole outbox, delivered events included, which only grows until
-- retention deletes them (2 million rows: 200 ms a query; with it, 2 ms). The predicate is
-- the one those statements filter on, word for word, so that the planner can use it.
CREATE INDEX outbox_undelivered ON outbox (destination) WHERE status IN ('pending', 'dead');
