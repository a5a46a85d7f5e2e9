SELECT 'a
b' AS x,
  y FROM t
