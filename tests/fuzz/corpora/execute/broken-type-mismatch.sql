CREATE STREAM s AS SELECT symbol + price, NOT volume, symbol AND TRUE FROM trades
