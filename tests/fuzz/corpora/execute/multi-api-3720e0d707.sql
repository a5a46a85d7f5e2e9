create source trades (symbol varchar, price double, volume bigint, ts bigint, watermark for ts as ts);
create stream big as select symbol, price * volume as notional, ts from trades where volume > 500 and symbol is not null;
/* streams read streams */ create stream bars as select symbol, window_start, sum(notional) as total, count(*) as n from big group by symbol, tumble(ts, interval '1' second);
