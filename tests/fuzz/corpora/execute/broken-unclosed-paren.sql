CREATE STREAM s AS SELECT ((price + 1 FROM trades
