desc Trades
