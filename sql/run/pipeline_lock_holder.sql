-- Who holds one of a pipeline's locks, for the message of a refused run. $1 the lock's key text
SELECT a.pid, COALESCE(NULLIF(a.application_name, ''), 'unnamed client') AS application_name,
       date_trunc('second', a.backend_start) AS connected_since
  FROM pg_locks l
  JOIN pg_stat_activity a USING (pid)
 WHERE l.locktype = 'advisory' AND l.granted
   AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended($1, 0)
