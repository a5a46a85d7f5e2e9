CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,
                        WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);
  CREATE STREAM vwap AS
    SELECT symbol, window_start, SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS n
    FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)
    EMIT ON WINDOW CLOSE;
