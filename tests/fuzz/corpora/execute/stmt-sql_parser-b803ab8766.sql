SELECT * FROM trades
