CREATE STREAM s AS SELECT symbol FROM trades WHERE SUM(price) > 1 GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)
