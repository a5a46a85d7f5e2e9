CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE NOT NULL,
                        volume BIGINT NOT NULL, ts BIGINT NOT NULL,
                        WATERMARK FOR ts AS ts)
