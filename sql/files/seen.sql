-- The files a run found in its folder ($3), marked seen at most once a day each, so that
-- retention prunes only the registry rows of files that are gone (retention/source_files.sql)
-- without a write per file per run.
UPDATE tidemark_source_files
   SET seen_at = statement_timestamp()
 WHERE pipeline = $1 AND source = $2 AND file = ANY ($3::text[])
   AND seen_at < statement_timestamp() - interval '1 day'
