-- Signals the postmaster to read its configuration (pg_hba.conf) again; it does not wait.
SELECT pg_reload_conf()
