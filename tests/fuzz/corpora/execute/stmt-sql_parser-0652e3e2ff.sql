SELECT a FROM t JOIN u ON a = b
