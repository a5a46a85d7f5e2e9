SELECT b FROM t u v
