-- A released quarantine entry keeps its history: who released it, when, in which run, and
-- what the re-validated record became. No row when it was released already: the release's
-- batch is then rolled back. $1 id, $2 released_by, $3 outcome, $4 the release's run
UPDATE quarantine SET released_at = now(), released_by = $2, release_outcome = $3, release_run_id = $4
 WHERE id = $1 AND released_at IS NULL
RETURNING id
