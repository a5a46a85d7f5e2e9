-- name, columns, watermark_column
SHOW STREAMS
