-- The entity whose table is $1, if Tidemark created or adopted it for one.
SELECT name FROM tidemark_entities WHERE table_name = $1
