CREATE STREAM big AS SELECT symbol, price * volume AS notional, ts
                         FROM trades WHERE volume > 500
