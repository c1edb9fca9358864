-- The relation a postgres source's config names ($1), resolved as SQL resolves a name
-- (unquoted parts fold to lower case, the search_path finds an unqualified one): its oid, its
-- relkind and its qualified name as an identifier; no row when there is none.
SELECT c.oid::bigint AS oid, c.relkind::text AS kind,
       quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS quoted_name
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.oid = to_regclass($1)
