CREATE STREAM w1 AS
    SELECT window_start, symbol, SUM(price * volume) / SUM(volume) AS vwap,
           COUNT(*) AS trades, MAX(price) AS max_price, MIN(price) AS min_price
    FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)
    EMIT ON WINDOW CLOSE
