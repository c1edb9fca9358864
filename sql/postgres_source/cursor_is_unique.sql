-- Whether a unique index of relation $1 (valid, not partial, no expressions) has only cursor
-- columns ($2, text[]) as its keys: then no two rows share a cursor tuple, and a batch that
-- ends inside a run of equal values cannot skip the rest of the run.
SELECT EXISTS (
  SELECT 1 FROM pg_index i
  WHERE i.indrelid = $1::oid AND i.indisunique AND i.indisvalid AND i.indpred IS NULL AND i.indexprs IS NULL
    AND (SELECT bool_and(a.attname = ANY($2::text[]))
         FROM pg_attribute a
         WHERE a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey[0:i.indnkeyatts - 1]))
) AS is_unique
