-- The fields of entity $1's recorded declaration, in declared order (see recorded_declaration.sql):
-- name, type, required, max_length (text), precision and scale (decimal).
SELECT f->>'name', f->>'type', (f->>'required')::boolean, (f->>'max_length')::bigint, (f->>'precision')::int,
       (f->>'scale')::int
  FROM tidemark_entities, jsonb_array_elements(definition->'fields') WITH ORDINALITY AS d(f, n)
 WHERE name = $1
 ORDER BY n
