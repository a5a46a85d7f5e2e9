SELECT a FROM t WHERE x = 'it''s
