-- The pipeline of a quarantine entry (its destinations come from the config) and whether
-- it was released already.
SELECT pipeline, released_at IS NOT NULL FROM quarantine WHERE id = $1
