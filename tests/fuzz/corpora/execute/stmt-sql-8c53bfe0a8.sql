-- refused (LDB-1007) while a stream reads it
DROP STREAM [IF EXISTS] name
