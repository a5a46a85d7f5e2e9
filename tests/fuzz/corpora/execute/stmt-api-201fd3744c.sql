CREATE STREAM w1 AS SELECT symbol, window_start AS ws, SUM(volume) AS v FROM m1 GROUP BY symbol, tumble(ts, INTERVAL '10' MILLISECOND)
