create source trades (symbol varchar, price double, volume bigint, ts bigint, watermark for ts as ts)
