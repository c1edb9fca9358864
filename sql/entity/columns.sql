-- Table $1's columns as the catalog has them, resolved like the unqualified name in the
-- generated statements (the search path): no rows when there is no such table.
-- type is format_type's spelling ("numeric(12,2)", "timestamp with time zone").
SELECT a.attname AS name,
       format_type(a.atttypid, a.atttypmod) AS type,
       a.attnotnull AS not_null,
       (a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '') AS has_default,
       COALESCE(a.attnum = ANY (p.conkey), false) AS in_primary_key,
       COALESCE(cardinality(p.conkey), 0) AS primary_key_columns
  FROM pg_attribute a
  LEFT JOIN pg_constraint p ON p.conrelid = a.attrelid AND p.contype = 'p'
 WHERE a.attrelid = to_regclass(quote_ident($1))
   AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attnum
