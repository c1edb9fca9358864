-- The pipeline of a quarantine entry: its destinations and its entity come from the config.
SELECT pipeline FROM quarantine WHERE id = $1
