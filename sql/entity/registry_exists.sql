-- Whether tidemark_entities exists: a database not migrated yet has recorded no entity
-- (`tidemark check` reads a database as it finds it).
SELECT to_regclass('tidemark_entities') IS NOT NULL AS registry_exists
