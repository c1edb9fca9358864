-- Ends run $1 with status $2 and, if not empty, the error $3 (stored as text that is valid
-- UTF-8).
UPDATE runs SET status = $2, finished_at = now(), error = NULLIF($3, '') WHERE id = $1
