CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,
                          WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND)
