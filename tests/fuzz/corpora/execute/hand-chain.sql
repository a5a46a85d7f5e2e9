CREATE STREAM f AS SELECT symbol, price * volume AS notional, ts FROM trades WHERE volume > 0;
CREATE STREAM g AS SELECT symbol, window_start, SUM(notional) AS total FROM f GROUP BY symbol, tumble(ts, INTERVAL '2' SECOND);
CREATE STREAM h AS SELECT * FROM g WHERE total IS NOT NULL
