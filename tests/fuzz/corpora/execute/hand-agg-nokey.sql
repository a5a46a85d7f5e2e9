CREATE STREAM total AS SELECT window_start, SUM(volume) AS v, MAX(ts) AS last FROM trades GROUP BY tumble(ts, INTERVAL '1' MILLISECOND)
