/* streams read streams */ create stream bars as select symbol, window_start, sum(notional) as total, count(*) as n from big group by symbol, tumble(ts, interval '1' second)
