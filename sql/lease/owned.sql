-- The partitions the worker owns, with their epochs. $1 pipeline, $2 partitions, $3 worker id
SELECT partition, epoch FROM tidemark_partitions
 WHERE pipeline = $1 AND owner = $3 AND partition < $2
 ORDER BY partition
