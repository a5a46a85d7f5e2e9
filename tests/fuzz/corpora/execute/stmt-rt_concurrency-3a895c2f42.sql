CREATE STREAM %s AS SELECT seq, seq * 2 AS twice FROM s
