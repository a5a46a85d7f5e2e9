DESCRIBE trades
