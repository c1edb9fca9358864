-- `tidemark quarantine list`: entries oldest first, of pipeline $1 (all when ''), released
-- ones only when $2, at most $3. Absent values print as '-' so the columns stay aligned. The
-- claimed key and revision under names that fit every entity (transaction_id holds any key).
SELECT id, pipeline, reason, COALESCE(transaction_id, '-') AS key,
       COALESCE(source_revision::text, '-') AS revision, position, detail,
       COALESCE(release_outcome, '') AS released_as
  FROM quarantine WHERE ($1 = '' OR pipeline = $1) AND ($2 OR released_at IS NULL) ORDER BY id LIMIT $3
