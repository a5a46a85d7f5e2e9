CREATE STREAM name AS
  SELECT items FROM input [WHERE cond]
  [GROUP BY keys..., tumble(time_col, INTERVAL 'n' unit) [HAVING cond]]
  [EMIT ON WINDOW CLOSE | EMIT FINAL]
