-- The columns table $1 (a quoted identifier) has now, none when it does not exist: a stored
-- row is read by the columns its entity declares and the table has (a field added to the
-- config since the last run has no column yet).
SELECT attname FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped
