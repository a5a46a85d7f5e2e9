CREATE SOURCE trades (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT, WATERMARK FOR ts AS ts)
