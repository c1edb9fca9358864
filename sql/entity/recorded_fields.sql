-- The fields of entity $1's recorded declaration, in declared order (see recorded_declaration.sql):
-- name, type, required, max_length (text), precision and scale (decimal).
SELECT f->>'name' AS name, f->>'type' AS type, (f->>'required')::boolean AS required,
       (f->>'max_length')::bigint AS max_length, (f->>'precision')::int AS precision, (f->>'scale')::int AS scale
  FROM tidemark_entities, jsonb_array_elements(definition->'fields') WITH ORDINALITY AS d(f, n)
 WHERE name = $1
 ORDER BY n
