CREATE STREAM s AS SELECT k, window_start, SUM(v) AS sv, COUNT(*) AS c, MIN(name) AS mn, AVG(x) AS ax FROM t GROUP BY k, tumble(ts, INTERVAL '10' MILLISECOND)
