CREATE STREAM s AS SELECT symbol, price, COUNT(*) FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)
