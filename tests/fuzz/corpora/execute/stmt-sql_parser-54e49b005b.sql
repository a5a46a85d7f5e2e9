SELECT
  -x * y, NOT b, -5
FROM t
