CREATE STREAM m AS SELECT k, window_start, window_end, COUNT(*) AS c FROM e GROUP BY k, tumble(t, INTERVAL '1' MINUTE)
