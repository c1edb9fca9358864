-- `tidemark status`: the pipelines the database knows (runs, checkpoints, open quarantine),
-- also those no longer in the config.
SELECT pipeline FROM runs
UNION SELECT pipeline FROM checkpoint
UNION SELECT pipeline FROM quarantine WHERE released_at IS NULL
ORDER BY 1
