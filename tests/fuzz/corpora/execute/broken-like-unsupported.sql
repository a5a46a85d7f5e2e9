CREATE STREAM s AS SELECT symbol FROM trades WHERE symbol LIKE 'A%'
