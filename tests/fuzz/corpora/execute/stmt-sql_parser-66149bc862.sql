SELECT a FROM t
WHERE b = 'abc
