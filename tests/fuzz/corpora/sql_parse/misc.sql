-- comment
/* block */ EXPLAIN SELECT -a * +b % 3 || 'x', NOT a = b OR c <> d AND e != f FROM s;; DROP MATERIALIZED VIEW IF EXISTS v; SHOW STREAMS; DESC s; CREATE SINK k FROM v; DROP SOURCE s