CREATE STREAM m1 AS SELECT symbol, ts, volume FROM trades
