-- Every column of relation $1 (an oid), in table order: its name, as an identifier, its type
-- (for the casts of a resume), NOT NULL, and its collation when it has one (the order a text
-- cursor sorts in).
SELECT a.attname::text AS name, quote_ident(a.attname) AS quoted_name, format_type(a.atttypid, NULL) AS type,
       a.attnotnull AS not_null,
       (SELECT quote_ident(n.nspname) || '.' || quote_ident(co.collname)
        FROM pg_collation co JOIN pg_namespace n ON n.oid = co.collnamespace
        WHERE co.oid = a.attcollation) AS collation
FROM pg_attribute a
WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
