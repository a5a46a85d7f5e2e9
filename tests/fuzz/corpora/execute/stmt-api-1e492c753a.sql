CREATE STREAM raw AS SELECT symbol, price FROM trades
