create stream big as select symbol, price * volume as notional, ts from trades where volume > 500 and symbol is not null
