CREATE STREAM bad AS\n  SELECT nope FROM trades
