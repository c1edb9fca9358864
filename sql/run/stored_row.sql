-- What an entity's table stores for key $1, as one JSON object in table order, shown beside a
-- quarantined record. Filled in by pipeline/run/quarantine_release.cpp from the entity's
-- declaration (quoted identifiers): {{columns}} (the key, the revision and the value columns
-- the table has, numeric ones as text), {{table}}, {{key}}.
SELECT row_to_json(r)::text AS json FROM (SELECT {{columns}} FROM {{table}} WHERE {{key}} = $1) r
