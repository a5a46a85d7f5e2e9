CREATE STREAM vwap AS
    SELECT symbol, window_start, SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS n
    FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)
    EMIT ON WINDOW CLOSE
