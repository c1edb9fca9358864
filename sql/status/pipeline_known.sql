-- GET /v1/pipelines/{name} and `tidemark status --pipeline` for a name the config does not
-- list: does the database know pipeline $1 (as known_pipelines.sql would list it)? Each
-- probe is one index lookup, whatever the history's size.
SELECT EXISTS (SELECT 1 FROM runs WHERE pipeline = $1)
    OR EXISTS (SELECT 1 FROM checkpoint WHERE pipeline = $1)
    OR EXISTS (SELECT 1 FROM quarantine WHERE pipeline = $1 AND released_at IS NULL) AS known
