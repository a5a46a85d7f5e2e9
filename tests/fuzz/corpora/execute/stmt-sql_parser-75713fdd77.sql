SELECT a FROM t /* never
 closed
