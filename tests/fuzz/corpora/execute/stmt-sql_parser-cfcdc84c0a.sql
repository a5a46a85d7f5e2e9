SELECT a,
  f(b
  FROM t
