-- Records migration $1 as applied, in the transaction that applied it.
INSERT INTO schema_migrations (version) VALUES ($1)
