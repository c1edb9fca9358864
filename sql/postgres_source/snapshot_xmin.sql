-- The snapshot's xmin as an xid (the low 32 bits of the xid8), to compare rows' xmin with.
SELECT (pg_snapshot_xmin(pg_current_snapshot())::text::numeric % 4294967296)::text AS xmin
