-- The pipeline of quarantine entry $1, whose destinations an accepted release writes to.
SELECT pipeline FROM quarantine WHERE id = $1
