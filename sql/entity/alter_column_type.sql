-- Changes an entity table's column to the type its declaration asks for (docs/entities.md
-- "Schema changes"): run by Tidemark for a change that loses nothing, quoted in the refusal of
-- any other as the statement a user could run by hand. Filled in by
-- pipeline/store/entity_sql.cpp (column_change): <table>, <column> (quoted identifiers),
-- <type> (as format_type spells it), <using> ("" or " USING <column>::<type>" when PostgreSQL
-- has no assignment cast between the two types). The statement is quoted without these lines.
ALTER TABLE {{table}} ALTER COLUMN {{column}} TYPE {{type}}{{using}}
