-- A released quarantine entry keeps its history: who released it, when, and what the
-- re-validated record became. $1 id, $2 released_by, $3 outcome
UPDATE quarantine SET released_at = now(), released_by = $2, release_outcome = $3
 WHERE id = $1 AND released_at IS NULL
