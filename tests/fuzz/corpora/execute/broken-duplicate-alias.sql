CREATE STREAM s AS SELECT price AS x, volume AS x FROM trades
