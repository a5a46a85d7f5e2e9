DROP SOURCE [IF EXISTS] name;   -- refused (LDB-1007) while a stream reads it
DROP STREAM [IF EXISTS] name;   -- its subscriptions end (LDB-4001 once drained)
SHOW SOURCES;                   -- name, columns, watermark_column
SHOW STREAMS;                   -- name, input, plan
DESCRIBE name;                  -- column_name, column_type, null
