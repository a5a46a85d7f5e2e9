CREATE STREAM s AS SELECT symbol, price, COUNT(*) FROM trades GRO--UP BY symbol, tumble(ts, INTERVAL '1' SECOND)
